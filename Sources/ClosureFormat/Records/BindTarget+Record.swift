import LaunchPlan
import MachOReader

/// The closure's bind targets in two flat columns, as the launch reads them: per target its
/// image (or none) and its offset there (or its absolute value), turned into values in one pass
/// once the images are mapped; everyone else reads ``BindTarget``s through the collection.
///
/// Encoding of a target: kind byte, then 0 `image` ULEB `offset` ULEB | 1 `value` ULEB | 2 (missing weak import).
package struct BindTargetTable: RandomAccessCollection, MutableCollection, ExpressibleByArrayLiteral, Equatable, Sendable {
    /// Per target: its image's index, or ``absolute`` or ``missingWeakImport`` (negative).
    /// A closure holds at most `Int32.max` images (``ClosureReader/int(_:)``).
    private var images: [Int32]
    /// Per target: the offset in its image, the absolute value, or 0.
    private var values: [UInt64]
    static let absolute: Int32 = -1
    static let missingWeakImport: Int32 = -2

    package init(_ targets: [BindTarget]) {
        images = []
        values = []
        images.reserveCapacity(targets.count)
        values.reserveCapacity(targets.count)
        for target in targets { append(target) }
    }

    package init(arrayLiteral targets: BindTarget...) { self.init(targets) }

    private mutating func append(_ target: BindTarget) {
        let (image, value) = Self.columns(target)
        images.append(image)
        values.append(value)
    }

    private static func columns(_ target: BindTarget) -> (image: Int32, value: UInt64) {
        switch target {
        case let .image(index, offset): (Int32(truncatingIfNeeded: index), offset)
        case let .absolute(value): (absolute, value)
        case .missingWeakImport: (missingWeakImport, 0)
        }
    }

    package var startIndex: Int { 0 }
    package var endIndex: Int { images.count }

    package subscript(position: Int) -> BindTarget {
        get {
            switch images[position] {
            case Self.absolute: .absolute(values[position])
            case Self.missingWeakImport: .missingWeakImport
            case let image: .image(Int(image), offset: values[position])
            }
        }
        set { (images[position], values[position]) = Self.columns(newValue) }
    }

    /// Each target's value with image `i` mapped at `bases[i]`: one pass, no enum decoded.
    package func values(bases: [UInt64]) -> [UInt64] {
        zip(images, values).map { image, value in image >= 0 ? bases[Int(image)] &+ value : value }
    }

    /// What ``UnsafeBindTargetScan`` read: both columns and the bytes they took.
    typealias Scan = (images: [Int32], values: [UInt64], consumed: Int)

    /// Reads a table of `count` targets where `r` is; an image target must lie inside its image
    /// (`imageSizes`). `scanned`, what ``UnsafeBindTargetScan`` read (nil: refused), is kept when
    /// every image target is inside; else this loop reads them again and says what is wrong.
    static func parse(count: Int, from r: inout ClosureReader, imageSizes: [UInt64], scanned: Scan?) throws(ClosureError) -> BindTargetTable {
        var table = BindTargetTable([])
        if let scanned, zip(scanned.images, scanned.values).allSatisfy({ image, offset in image < 0 || offset < imageSizes[Int(image)] }) {
            (table.images, table.values) = (scanned.images, scanned.values)
            r.position += scanned.consumed
            return table
        }
        // One allocation for a real closure's table; a larger claimed count grows as
        // targets actually decode.
        table.images.reserveCapacity(Swift.min(count, 1 << 20))
        table.values.reserveCapacity(Swift.min(count, 1 << 20))
        for _ in 0..<count {
            let start = r.position
            switch try r.u8() {
            case 0:
                let index = try r.int("target image")
                let offset = try r.uleb()
                guard index < imageSizes.count, offset < imageSizes[index] else {
                    throw r.corrupt("bind target (image \(index), offset \(hex(offset))) is outside its image", at: start)
                }
                table.images.append(Int32(index))
                table.values.append(offset)
            case 1:
                table.images.append(absolute)
                table.values.append(try r.uleb())
            case 2:
                table.images.append(missingWeakImport)
                table.values.append(0)
            case let tag: throw r.corrupt("unknown bind target kind \(tag)", at: start)
            }
        }
        return table
    }

    func encode(into w: inout ClosureWriter) {
        w.uleb(count)
        for target in self { target.encode(into: &w) }
    }
}

extension BindTarget {
    func encode(into w: inout ClosureWriter) {
        switch self {
        case let .image(index, offset): w.u8(0); w.uleb(index); w.uleb(offset)
        case let .absolute(value): w.u8(1); w.uleb(value)
        case .missingWeakImport: w.u8(2)
        }
    }
}
