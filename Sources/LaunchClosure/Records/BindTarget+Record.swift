import LoaderCore

/// A bind target as a closure record.
///
/// Encoding: kind byte, then 0 `image` ULEB `offset` ULEB | 1 `value` ULEB | 2 (missing weak import).
extension BindTarget {
    /// Reads a table of `count` targets in one loop (the table has tens of thousands: the
    /// loop takes `imageSizes` once, not once per target).
    static func parseTable(count: Int, from r: inout ClosureReader, imageSizes: [UInt64]) throws(ClosureError) -> [BindTarget] {
        var targets: [BindTarget] = []
        // One allocation for a real closure's table; a larger claimed count grows as
        // targets actually decode.
        targets.reserveCapacity(min(count, 1 << 20))
        for _ in 0..<count { targets.append(try BindTarget(parsing: &r, imageSizes: imageSizes)) }
        return targets
    }

    /// Reads one target; an image target must lie inside one of `images`' address ranges.
    @inline(__always)
    init(parsing r: inout ClosureReader, imageSizes: [UInt64]) throws(ClosureError) {
        let start = r.position
        switch try r.u8() {
        case 0:
            let index = try r.int("target image")
            let offset = try r.uleb()
            guard index < imageSizes.count, offset < imageSizes[index] else {
                throw r.corrupt("bind target (image \(index), offset 0x\(String(offset, radix: 16))) is outside its image", at: start)
            }
            self = .image(index, offset: offset)
        case 1: self = .absolute(try r.uleb())
        case 2: self = .missingWeakImport
        case let tag: throw r.corrupt("unknown bind target kind \(tag)", at: start)
        }
    }

    func encode(into w: inout ClosureWriter) {
        switch self {
        case let .image(index, offset): w.u8(0); w.uleb(index); w.uleb(offset)
        case let .absolute(value): w.u8(1); w.uleb(value)
        case .missingWeakImport: w.u8(2)
        }
    }
}
