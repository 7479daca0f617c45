#if canImport(Glibc)
import Glibc
#endif

/// The memory a ``ByteView`` reads: a read-only region that lives as long as this object.
///
/// Either bytes copied in from an array (tests, fuzzers, closures' plan checks), or a
/// region someone else made, typically a read-only file mapping, handed over with the
/// function that releases it (`munmap`). The reader does no I/O itself: whoever maps the
/// file owns that decision, and the reader only reads, always after ``ByteView`` has
/// checked the range. The bytes never change after creation, so sharing one storage
/// between threads is safe.
@safe package final class ByteStorage: @unchecked Sendable {
    /// The first byte, nil when `count` is 0.
    @usableFromInline let start: UnsafeRawPointer?
    /// Number of readable bytes.
    package let count: Int
    private let release: (@Sendable (UnsafeRawPointer, Int) -> Void)?
    /// For a file mapping: where the next hole (`SEEK_HOLE`), or with `true` the next data
    /// (`SEEK_DATA`), of the sparse file starts at or after an offset; past the end when there
    /// is none. Nil for memory that has no holes.
    private let holeProbe: (@Sendable (_ offset: Int, _ data: Bool) -> Int)?

    /// A copy of `bytes`.
    package init(_ bytes: [UInt8]) {
        count = bytes.count
        guard !bytes.isEmpty else {
            unsafe start = nil
            unsafe release = nil
            holeProbe = nil
            return
        }
        let memory = UnsafeMutableRawPointer.allocate(byteCount: bytes.count, alignment: 16)
        unsafe bytes.withUnsafeBytes { unsafe memory.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        unsafe start = UnsafeRawPointer(memory)
        unsafe release = { pointer, _ in unsafe UnsafeMutableRawPointer(mutating: pointer).deallocate() }
        holeProbe = nil
    }

    /// `count` readable bytes at `start`, which must stay readable and unchanged until
    /// `release(start, count)` runs when the storage is freed; `holes` answers where the
    /// mapped file's next hole starts (see ``nextHole(from:)``).
    package init(unsafeStart start: UnsafeRawPointer, count: Int, holes: (@Sendable (_ offset: Int, _ data: Bool) -> Int)? = nil,
                 release: @escaping @Sendable (UnsafeRawPointer, Int) -> Void) {
        unsafe self.start = unsafe start
        self.count = count
        unsafe self.release = unsafe release
        holeProbe = holes
    }

    /// The holes of `[offset, end)` (ranges of a sparse file that hold no data and read as
    /// zeros), ascending; none for memory that is not a file mapping. Two `lseek` calls per
    /// hole, one when there is none: the list is as long as the file's data is fragmented.
    package func holes(from offset: Int, to end: Int) -> [Range<Int>] {
        guard let holeProbe else { return [] }
        let end = min(end, count)
        var holes: [Range<Int>] = []
        var position = offset
        while position < end {
            let hole = max(holeProbe(position, false), position)
            guard hole < end else { break }
            let data = max(holeProbe(hole, true), hole + 1)
            holes.append(hole..<min(data, end))
            position = data
        }
        return holes
    }

    deinit {
        if let start = unsafe start, let release = unsafe release { unsafe release(start, count) }
    }

    // The reads below trust their caller (``ByteView``) to have checked the range.

    @inlinable @inline(__always)
    func load<T: FixedWidthInteger>(_ offset: Int, as type: T.Type) -> T {
        unsafe T(littleEndian: start.unsafelyUnwrapped.loadUnaligned(fromByteOffset: offset, as: T.self))
    }

    @inline(__always)
    func loadBigEndian<T: FixedWidthInteger>(_ offset: Int, as type: T.Type) -> T {
        unsafe T(bigEndian: start.unsafelyUnwrapped.loadUnaligned(fromByteOffset: offset, as: T.self))
    }

    /// A copy of `length` bytes at `offset`.
    func array(_ offset: Int, _ length: Int) -> [UInt8] {
        guard length > 0 else { return [] }
        return unsafe Array(UnsafeRawBufferPointer(start: start.unsafelyUnwrapped + offset, count: length))
    }

    /// `length` bytes at `offset` decoded as UTF-8 (invalid sequences repaired).
    func string(_ offset: Int, _ length: Int) -> String {
        guard length > 0 else { return "" }
        return unsafe String(decoding: UnsafeRawBufferPointer(start: start.unsafelyUnwrapped + offset, count: length), as: UTF8.self)
    }

    /// The offset of the first 0 byte in `[offset, end)`, or nil.
    func firstZero(from offset: Int, to end: Int) -> Int? {
        guard end > offset else { return nil }
        guard let found = unsafe memchr(start.unsafelyUnwrapped + offset, 0, end - offset) else { return nil }
        return unsafe UnsafeRawPointer(found) - start.unsafelyUnwrapped
    }

    /// Whether the `length` bytes at `offset` equal the `length` bytes at `otherOffset` of `other`.
    @inline(__always)
    func bytesEqual(_ offset: Int, _ other: ByteStorage, _ otherOffset: Int, _ length: Int) -> Bool {
        guard length > 0 else { return true }
        return unsafe memcmp(start.unsafelyUnwrapped + offset, other.start.unsafelyUnwrapped + otherOffset, length) == 0
    }

    /// Feeds the `length` bytes at `offset` to `hasher`.
    func hashBytes(_ offset: Int, _ length: Int, into hasher: inout Hasher) {
        guard length > 0 else { return hasher.combine(0 as UInt8) }
        unsafe hasher.combine(bytes: UnsafeRawBufferPointer(start: start.unsafelyUnwrapped + offset, count: length))
    }

    /// Calls `body` with the `length` bytes at `offset`, without copying them.
    func withBytes<R>(_ offset: Int, _ length: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        guard length > 0 else { return unsafe try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        return unsafe try body(UnsafeRawBufferPointer(start: start.unsafelyUnwrapped + offset, count: length))
    }
}

extension ByteView {
    /// The little-endian word at `offset`, which the caller has checked lies inside the
    /// window (`0 <= offset <= count - 8`, or 4 for ``uncheckedU32(_:)``): for loops that
    /// check a whole range once, such as a chain walk.
    @inlinable @inline(__always)
    func uncheckedU64(_ offset: Int) -> UInt64 { storage.load(base &+ offset, as: UInt64.self) }

    /// See ``uncheckedU64(_:)``.
    @inlinable @inline(__always)
    func uncheckedU32(_ offset: Int) -> UInt32 { storage.load(base &+ offset, as: UInt32.self) }

    /// Calls `body` with the window's bytes in place (for libraries that take a buffer:
    /// hashing, decompression), without copying them.
    package func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        unsafe try storage.withBytes(base, count, body)
    }
}
