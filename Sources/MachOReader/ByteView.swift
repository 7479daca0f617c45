/// A bounded, read-only window onto a file's bytes.
///
/// Every read is bounds-checked against the window and fails with a ``MachOError``
/// carrying the absolute file offset. Windows share the file's storage: slicing one
/// is cheap and never copies.
public struct ByteView: Sendable {
    /// The whole file.
    public let storage: [UInt8]
    /// Absolute offset of the window's first byte in `storage`.
    public let base: Int
    /// Number of bytes in the window.
    public let count: Int

    /// A window onto all of `bytes`.
    public init(_ bytes: [UInt8]) {
        self.storage = bytes
        self.base = 0
        self.count = bytes.count
    }

    private init(storage: [UInt8], base: Int, count: Int) {
        self.storage = storage
        self.base = base
        self.count = count
    }

    /// The absolute file offset of a window-relative offset.
    @inline(__always)
    public func absolute(_ offset: Int) -> Int { base + offset }

    /// Fails unless `[offset, offset + length)` lies inside the window.
    @inline(__always)
    public func check(_ offset: Int, _ length: Int) throws(MachOError) {
        guard offset >= 0, length >= 0, offset <= count, length <= count - offset else {
            throw MachOError(
                offset: base + max(0, min(offset, count)),
                .truncated(needed: length, available: offset >= 0 && offset <= count ? count - offset : 0))
        }
    }

    /// A sub-window of `length` bytes at `offset`.
    public func slice(_ offset: Int, _ length: Int) throws(MachOError) -> ByteView {
        try check(offset, length)
        return ByteView(storage: storage, base: base + offset, count: length)
    }

    /// A sub-window given by 64-bit file fields (offset and size from a load command).
    public func slice(offset: UInt64, size: UInt64) throws(MachOError) -> ByteView {
        guard offset <= UInt64(Int.max), size <= UInt64(Int.max) else {
            throw MachOError(offset: base, .malformed("range 0x\(String(offset, radix: 16))+0x\(String(size, radix: 16)) is out of bounds"))
        }
        return try slice(Int(offset), Int(size))
    }

    public func u8(_ offset: Int) throws(MachOError) -> UInt8 {
        try check(offset, 1)
        return storage[base + offset]
    }

    public func u16(_ offset: Int) throws(MachOError) -> UInt16 {
        try check(offset, 2)
        let p = base + offset
        return UInt16(storage[p]) | UInt16(storage[p + 1]) << 8
    }

    public func u32(_ offset: Int) throws(MachOError) -> UInt32 {
        try check(offset, 4)
        let p = base + offset
        return UInt32(storage[p]) | UInt32(storage[p + 1]) << 8
            | UInt32(storage[p + 2]) << 16 | UInt32(storage[p + 3]) << 24
    }

    public func u64(_ offset: Int) throws(MachOError) -> UInt64 {
        try check(offset, 8)
        let p = base + offset
        var value: UInt64 = 0
        for i in (0..<8).reversed() { value = value << 8 | UInt64(storage[p + i]) }
        return value
    }

    /// Big-endian 32-bit read (universal headers are big-endian).
    public func u32BE(_ offset: Int) throws(MachOError) -> UInt32 {
        try check(offset, 4)
        let p = base + offset
        return UInt32(storage[p]) << 24 | UInt32(storage[p + 1]) << 16
            | UInt32(storage[p + 2]) << 8 | UInt32(storage[p + 3])
    }

    /// Big-endian 64-bit read.
    public func u64BE(_ offset: Int) throws(MachOError) -> UInt64 {
        UInt64(try u32BE(offset)) << 32 | UInt64(try u32BE(offset + 4))
    }

    /// `length` raw bytes.
    public func bytes(_ offset: Int, _ length: Int) throws(MachOError) -> ArraySlice<UInt8> {
        try check(offset, length)
        return storage[(base + offset)..<(base + offset + length)]
    }

    /// A fixed-size, NUL-padded name field such as `segname[16]`.
    public func fixedString(_ offset: Int, _ length: Int) throws(MachOError) -> String {
        let raw = try bytes(offset, length)
        let end = raw.firstIndex(of: 0) ?? raw.endIndex
        return String(decoding: raw[raw.startIndex..<end], as: UTF8.self)
    }

    /// A NUL-terminated string starting at `offset`, which must end inside the window.
    public func cString(_ offset: Int) throws(MachOError) -> String {
        try cStringAndLength(offset).string
    }

    /// A NUL-terminated string and its length in bytes, not counting the terminator.
    public func cStringAndLength(_ offset: Int) throws(MachOError) -> (string: String, length: Int) {
        try check(offset, 0)
        let start = base + offset
        let end = base + count
        var p = start
        while p < end, storage[p] != 0 { p += 1 }
        guard p < end else {
            throw MachOError(offset: start, .malformed("string is not NUL-terminated inside its region"))
        }
        return (String(decoding: storage[start..<p], as: UTF8.self), p - start)
    }
}
