/// A bounded, read-only window onto a file's bytes.
///
/// Every read is bounds-checked against the window and fails with a ``MachOError``
/// carrying the absolute file offset. Windows share the file's storage (a read-only
/// mapping of the file, or a copy of an array): slicing one is cheap and never copies.
package struct ByteView: Sendable {
    /// The whole file.
    package let storage: ByteStorage
    /// Absolute offset of the window's first byte in `storage`.
    package let base: Int
    /// Number of bytes in the window.
    package let count: Int

    /// A window onto a copy of `bytes`.
    package init(_ bytes: [UInt8]) { self.init(ByteStorage(bytes)) }

    /// A window onto all of `storage`.
    package init(_ storage: ByteStorage) {
        self.storage = storage
        self.base = 0
        self.count = storage.count
    }

    private init(storage: ByteStorage, base: Int, count: Int) {
        (self.storage, self.base, self.count) = (storage, base, count)
    }

    /// The absolute file offset of a window-relative offset.
    @inline(__always)
    package func absolute(_ offset: Int) -> Int { base + offset }

    /// Fails unless `[offset, offset + length)` lies inside the window.
    @inline(__always)
    package func check(_ offset: Int, _ length: Int) throws(MachOError) {
        guard offset >= 0, length >= 0, offset <= count, length <= count - offset else {
            throw MachOError(
                offset: base + max(0, min(offset, count)),
                .truncated(needed: length, available: offset >= 0 && offset <= count ? count - offset : 0))
        }
    }

    /// A sub-window of `length` bytes at `offset`.
    package func slice(_ offset: Int, _ length: Int) throws(MachOError) -> ByteView {
        try check(offset, length)
        return ByteView(storage: storage, base: base + offset, count: length)
    }

    /// A sub-window given by 64-bit file fields (offset and size from a load command).
    package func slice(offset: UInt64, size: UInt64) throws(MachOError) -> ByteView {
        guard offset <= UInt64(Int.max), size <= UInt64(Int.max) else {
            throw MachOError(offset: base, .malformed("range \(hex(offset))+\(hex(size)) is out of bounds"))
        }
        return try slice(Int(offset), Int(size))
    }

    /// The little-endian integer at `offset`.
    @inline(__always)
    private func load<T: FixedWidthInteger>(_ offset: Int, as type: T.Type) throws(MachOError) -> T {
        try check(offset, MemoryLayout<T>.size)
        return storage.load(base + offset, as: type)
    }

    package func u8(_ offset: Int) throws(MachOError) -> UInt8 { try load(offset, as: UInt8.self) }
    package func u16(_ offset: Int) throws(MachOError) -> UInt16 { try load(offset, as: UInt16.self) }
    package func u32(_ offset: Int) throws(MachOError) -> UInt32 { try load(offset, as: UInt32.self) }
    package func u64(_ offset: Int) throws(MachOError) -> UInt64 { try load(offset, as: UInt64.self) }

    /// Big-endian 32-bit read (universal headers are big-endian).
    package func u32BE(_ offset: Int) throws(MachOError) -> UInt32 {
        try check(offset, 4)
        return storage.loadBigEndian(base + offset, as: UInt32.self)
    }

    /// Big-endian 64-bit read.
    package func u64BE(_ offset: Int) throws(MachOError) -> UInt64 {
        UInt64(try u32BE(offset)) << 32 | UInt64(try u32BE(offset + 4))
    }

    /// The unsigned LEB128 value at `position`, which moves past it; more than 64
    /// significant bits is an error.
    @inline(__always)
    package func uleb128(at position: inout Int) throws(MachOError) -> UInt64 {
        let start = absolute(position)
        return try leb128(LEB128.unsigned(at: &position, { try? u8($0) }), "uleb128", start: start)
    }

    /// The signed LEB128 number at `position`, which moves past it.
    @inline(__always)
    package func sleb128(at position: inout Int) throws(MachOError) -> Int64 {
        let start = absolute(position)
        return try leb128(LEB128.signed(at: &position, { try? u8($0) }), "sleb128", start: start)
    }

    /// A decoded number, or its failure: the out-of-bounds read where the bytes end, else a
    /// number over 64 bits, named `kind` at `start`.
    @inline(__always)
    func leb128<Value>(_ read: LEB128Read<Value>, _ kind: String, start: Int) throws(MachOError) -> Value {
        switch read {
        case let .value(value): return value
        case let .truncated(at): _ = try u8(at)
        case .tooLarge: break
        }
        throw MachOError.malformed("\(kind) value is too large", at: start)
    }

    /// Whether the two windows hold the same bytes (compared in place).
    @inline(__always)
    package func sameBytes(as other: ByteView) -> Bool {
        count == other.count && storage.bytesEqual(base, other.storage, other.base, count)
    }

    /// Feeds the window's bytes to `hasher` (for keys compared with ``sameBytes(as:)``).
    package func hashBytes(into hasher: inout Hasher) { storage.hashBytes(base, count, into: &hasher) }

    /// The holes of the underlying sparse file in the window's first `length` bytes (offsets
    /// in the window), ascending: bytes that read as zeros and were never stored.
    package func holes(before length: Int) -> [Range<Int>] {
        storage.holes(from: base, to: base + min(max(length, 0), count)).map { ($0.lowerBound - base)..<($0.upperBound - base) }
    }

    /// The window's bytes decoded as UTF-8 (invalid sequences repaired).
    package var string: String { storage.string(base, count) }

    /// A copy of `length` raw bytes.
    package func bytes(_ offset: Int, _ length: Int) throws(MachOError) -> [UInt8] {
        try check(offset, length)
        return storage.array(base + offset, length)
    }

    /// The window-relative offset of the first 0 byte in `[offset, offset + length)`, or nil.
    package func firstZero(_ offset: Int, _ length: Int) throws(MachOError) -> Int? {
        try check(offset, length)
        return storage.firstZero(from: base + offset, to: base + offset + length).map { $0 - base }
    }

    /// A fixed-size, NUL-padded name field such as `segname[16]`.
    package func fixedString(_ offset: Int, _ length: Int) throws(MachOError) -> String {
        try check(offset, length)
        let start = base + offset
        let end = storage.firstZero(from: start, to: start + length) ?? start + length
        return storage.string(start, end - start)
    }

    /// Whether the fixed-size, NUL-padded name field at `offset` holds `name`, compared in
    /// place (no string made from the field).
    package func fixedString(_ offset: Int, _ length: Int, is name: String) throws(MachOError) -> Bool {
        try check(offset, length)
        var index = 0
        for byte in name.utf8 {
            guard index < length, storage.load(base + offset + index, as: UInt8.self) == byte else { return false }
            index += 1
        }
        return index == length || storage.load(base + offset + index, as: UInt8.self) == 0
    }

    /// A NUL-terminated string starting at `offset`, which must end inside the window.
    package func cString(_ offset: Int) throws(MachOError) -> String { try cStringBytes(offset).string }

    /// The bytes of the NUL-terminated string at `offset`, terminator excluded; the string
    /// must end inside the window. Nothing is copied.
    package func cStringBytes(_ offset: Int) throws(MachOError) -> ByteView {
        try check(offset, 0)
        let start = base + offset
        guard let end = storage.firstZero(from: start, to: base + count) else {
            throw MachOError(offset: start, .malformed("string is not NUL-terminated inside its region"))
        }
        return ByteView(storage: storage, base: start, count: end - start)
    }
}
