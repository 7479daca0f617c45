import MachOReader
import LaunchPlan

/// Writes the closure body: LEB128 integers, length-prefixed strings and raw bytes.
struct ClosureWriter {
    private(set) var bytes: [UInt8] = []

    mutating func uleb(_ value: UInt64) { LEB128.appendUnsigned(value, to: &bytes) }

    mutating func uleb(_ value: Int) { uleb(UInt64(value)) }

    mutating func sleb(_ value: Int64) { LEB128.appendSigned(value, to: &bytes) }

    mutating func u8(_ value: UInt8) { bytes.append(value) }

    mutating func u64(_ value: UInt64) {
        for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }

    mutating func string(_ value: String) {
        uleb(value.utf8.count)
        bytes += value.utf8
    }

    mutating func blob(_ value: ArraySlice<UInt8>) {
        uleb(value.count)
        bytes += value
    }

    /// A count-prefixed list: the count of `items`, then each as `encode` writes it.
    mutating func list<Items: Collection>(_ items: Items, _ encode: (inout ClosureWriter, Items.Element) -> Void) {
        uleb(items.count)
        for item in items { encode(&self, item) }
    }

    /// Bytes already encoded (a record kept as read).
    mutating func raw(_ value: ArraySlice<UInt8>) { bytes += value }

    /// A file header's layout: `magic` (8 bytes), the xxh3-64 of every byte from offset 16 on,
    /// then these bytes and `payload`.
    func checksummed(magic: [UInt8], payload: [UInt8] = []) -> [UInt8] {
        var file = magic + [UInt8](repeating: 0, count: 8) + bytes + payload
        let checksum = UnsafeHash.xxh3(file[16...])
        for index in 0..<8 { file[8 + index] = UInt8(truncatingIfNeeded: checksum >> (8 * UInt64(index))) }
        return file
    }
}

/// Reads the closure body, trusting nothing: every read is bounds-checked, every count checked
/// against the bytes left before anything is allocated, every failure names its body offset.
/// It reads a slice of the body in place: positions are the body's own offsets, and a blob is
/// a slice sharing the body's storage (decoding copies no fixup runs).
struct ClosureReader {
    let bytes: ArraySlice<UInt8>
    var position: Int
    let path: String

    init(_ bytes: [UInt8], path: String) { self.init(bytes[...], path: path) }

    /// A reader of `bytes`, a slice of the body (offsets stay the body's).
    init(_ bytes: ArraySlice<UInt8>, path: String) {
        self.bytes = bytes
        self.position = bytes.startIndex
        self.path = path
    }

    /// The slice's own `endIndex`: a read's check and the subscript's check are one comparison.
    var end: Int { bytes.endIndex }

    var atEnd: Bool { position >= end }

    func corrupt(_ what: String, at offset: Int? = nil) -> ClosureError {
        .corrupt(path: path, offset: offset ?? position, what: "\(what) (offset in the uncompressed body)")
    }

    @inline(__always)
    mutating func u8() throws(ClosureError) -> UInt8 {
        guard position < end else { throw corrupt("truncated body") }
        defer { position += 1 }
        return bytes[position]
    }

    @inline(__always)
    mutating func uleb() throws(ClosureError) -> UInt64 {
        switch ClosureLEB128.unsigned(bytes, &position) {
        case let .success(value): return value
        case let .failure(failure): throw corrupt(failure)
        }
    }

    @inline(__always)
    mutating func sleb() throws(ClosureError) -> Int64 {
        switch ClosureLEB128.signed(bytes, &position) {
        case let .success(value): return value
        case let .failure(failure): throw corrupt(failure)
        }
    }

    func corrupt(_ fault: FixupFault) -> ClosureError {
        guard case let .corrupt(offset, corruption) = fault else { return corrupt("\(fault)") }
        return corrupt("\(corruption)", at: offset)
    }

    /// A count of items each at least `minimumSize` bytes long, checked against the bytes left.
    @inline(__always)
    mutating func count(of what: String, minimumSize: Int = 1) throws(ClosureError) -> Int {
        let start = position
        let value = try uleb()
        guard value <= UInt64((end - position) / max(1, minimumSize)) else {
            throw corrupt("\(what) count \(value) is more than the closure holds", at: start)
        }
        return Int(value)
    }

    @inline(__always)
    mutating func int(_ what: String) throws(ClosureError) -> Int {
        let start = position
        let value = try uleb()
        guard value <= UInt64(Int32.max) else { throw corrupt("\(what) \(value) is out of range", at: start) }
        return Int(value)
    }

    mutating func u64() throws(ClosureError) -> UInt64 {
        guard end - position >= 8 else { throw corrupt("truncated body") }
        defer { position += 8 }
        return bytes.littleEndianWord(position)
    }

    mutating func string() throws(ClosureError) -> String {
        let length = try count(of: "string byte")
        defer { position += length }
        return utf8String(position..<(position + length))
    }

    /// A length-prefixed blob: a slice of the body, not a copy.
    mutating func blob() throws(ClosureError) -> ArraySlice<UInt8> {
        bytes[try blobRange()]
    }

    /// Steps over a length-prefixed blob: where its bytes lie (no slice made, no storage shared).
    @inline(__always)
    mutating func blobRange() throws(ClosureError) -> Range<Int> {
        let length = try count(of: "blob byte")
        defer { position += length }
        return position..<(position + length)
    }

    /// A count-prefixed list (``ClosureWriter/list(_:_:)``) of items each at least
    /// `minimumSize` bytes long, each as `read` reads it.
    mutating func list<Item>(of what: String, minimumSize: Int = 1,
                             _ read: (inout ClosureReader) throws(ClosureError) -> Item) throws(ClosureError) -> [Item] {
        let count = try count(of: what, minimumSize: minimumSize)
        var items: [Item] = []
        items.reserveCapacity(count)
        for _ in 0..<count { items.append(try read(&self)) }
        return items
    }

    mutating func raw(_ length: Int) throws(ClosureError) -> [UInt8] {
        guard end - position >= length else { throw corrupt("truncated body") }
        defer { position += length }
        return copy(position..<(position + length))
    }
}

/// Closure bytes read by the one LEB128 decoder (``LEB128/unsigned(at:_:)``), moving `position` past the number. A failure is a
/// ``FixupFault/corrupt(byteOffset:_:)``: truncated (at the end's offset) or over 64 bits (at
/// the byte that makes it so); ``ClosureReader`` reports it as a corrupt closure.
enum ClosureLEB128 {
    @inline(__always)
    static func unsigned(_ bytes: ArraySlice<UInt8>, _ position: inout Int) -> Result<UInt64, FixupFault> {
        read(LEB128.unsigned(at: &position) { $0 < bytes.endIndex ? bytes[$0] : nil })
    }

    @inline(__always)
    static func signed(_ bytes: ArraySlice<UInt8>, _ position: inout Int) -> Result<Int64, FixupFault> {
        read(LEB128.signed(at: &position) { $0 < bytes.endIndex ? bytes[$0] : nil })
    }

    /// A number, or its failure as a fault naming the offset.
    @inline(__always)
    static func read<Value>(_ decoded: LEB128Read<Value>) -> Result<Value, FixupFault> {
        switch decoded {
        case let .value(value): .success(value)
        case let .truncated(at): .failure(.corrupt(byteOffset: at, .truncatedNumber))
        case let .tooLarge(at): .failure(.corrupt(byteOffset: at, .numberTooLarge))
        }
    }
}

extension Collection<UInt8> where Index == Int {
    /// The little-endian 64-bit word at `offset` (the caller checked the bounds).
    package func littleEndianWord(_ offset: Int) -> UInt64 {
        (0..<8).reversed().reduce(UInt64(0)) { $0 << 8 | UInt64(self[offset + $1]) }
    }

    /// The words after the magic of a file ``ClosureWriter/checksummed(magic:payload:)``
    /// wrote, where its header starts with a version and flags (the caller checked there
    /// are 24 bytes): the checksum, the version (u32) and the flags (u32).
    var checksumVersionAndFlags: (checksum: UInt64, version: UInt32, flags: UInt32) {
        let versionAndFlags = littleEndianWord(16)
        return (littleEndianWord(8), UInt32(truncatingIfNeeded: versionAndFlags), UInt32(truncatingIfNeeded: versionAndFlags >> 32))
    }
}
