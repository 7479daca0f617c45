import LaunchPlan

/// Closure bytes read through a pointer (the fast path's apply loop, the bind-target
/// table): every read compares against the end first, and any malformed number is a nil
/// that sends the caller to its checked reader.
@safe package struct UnsafeRawStream {
    private let start: UnsafeRawPointer
    private var cursor: UnsafeRawPointer
    private let end: UnsafeRawPointer

    /// An empty buffer has no address: the stream then starts and ends at a placeholder
    /// never read (every read finds the cursor at the end first).
    package init(_ bytes: UnsafeRawBufferPointer) {
        unsafe start = unsafe bytes.baseAddress ?? UnsafeRawPointer(bitPattern: MemoryLayout<UInt64>.alignment)!
        unsafe cursor = unsafe start
        unsafe end = unsafe start + bytes.count
    }

    package var atEnd: Bool { unsafe cursor == end }

    /// Bytes read so far.
    package var consumed: Int { unsafe cursor - start }

    /// One byte, or nil at the end.
    @inline(__always)
    package mutating func u8() -> UInt8? {
        guard unsafe cursor < end else { return nil }
        defer { unsafe cursor += 1 }
        return unsafe cursor.load(as: UInt8.self)
    }

    /// An unsigned LEB128 number, or nil when truncated or over 64 bits.
    @inline(__always)
    package mutating func uleb() -> UInt64? {
        guard unsafe cursor < end else { return nil }
        let first = unsafe cursor.load(as: UInt8.self)
        if first < 0x80 {
            unsafe cursor += 1
            return UInt64(first)
        }
        var pointer = unsafe cursor
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while unsafe pointer < end {
            let byte = unsafe pointer.load(as: UInt8.self)
            unsafe pointer += 1
            guard shift < 64, !(shift == 63 && byte & 0x7e != 0) else { return nil }
            result |= UInt64(byte & 0x7f) << shift
            if byte & 0x80 == 0 {
                unsafe cursor = unsafe pointer
                return result
            }
            shift += 7
        }
        return nil
    }

    /// A signed LEB128 number (as its two's-complement bits), or nil when truncated or over 64 bits.
    @inline(__always)
    package mutating func sleb() -> UInt64? {
        guard unsafe cursor < end else { return nil }
        let first = unsafe cursor.load(as: UInt8.self)
        if first < 0x80 {
            unsafe cursor += 1
            return UInt64(bitPattern: Int64(Int8(bitPattern: first << 1) >> 1))
        }
        var pointer = unsafe cursor
        var result: Int64 = 0
        var shift: Int64 = 0
        var byte: UInt8
        repeat {
            guard unsafe pointer < end, shift < 64 else { return nil }
            byte = unsafe pointer.load(as: UInt8.self)
            unsafe pointer += 1
            result |= Int64(byte & 0x7f) << shift
            shift += 7
        } while byte & 0x80 != 0
        if shift < 64, byte & 0x40 != 0 { result |= -1 << shift }
        unsafe cursor = unsafe pointer
        return UInt64(bitPattern: result)
    }

    /// A count of items of at least `minimumSize` bytes each, no more than the bytes left hold.
    @inline(__always)
    package mutating func count(minimumSize: Int = 1) -> Int? {
        guard let value = uleb(), unsafe value <= UInt64((end - cursor) / minimumSize) else { return nil }
        return Int(value)
    }

    /// The next run's header, as ``FixupRunWalk`` reads and checks it: start (a delta from
    /// `location`, the previous run's last location, which it updates), count, stride; nil
    /// for an empty or overflowing run.
    @inline(__always)
    package mutating func run(after location: inout UInt64) -> FixupRun? {
        guard let delta = uleb(), let count = count(), let stride = uleb() else { return nil }
        let (start, overflow) = location.addingReportingOverflow(delta)
        guard !overflow, let run = FixupRun(start: start, count: count, stride: stride) else { return nil }
        location = run.last
        return run
    }
}

/// Strings and small arrays copied out of the slice a ``ClosureReader`` reads, through a
/// pointer: no slice of the body is made, so no reference count is touched. The two threads
/// of a large launch read one body, and every retain and release of its storage would pass
/// one cache line between their cores (at 400 frameworks that made each image record ≈ 1.7×
/// slower to read than on one thread, docs/performance.md, "The closure read in place").
extension ClosureReader {
    /// The bytes at `range` (body offsets inside the slice, checked by the caller) decoded
    /// as UTF-8, invalid sequences repaired.
    func utf8String(_ range: Range<Int>) -> String {
        let base = bytes.startIndex
        return unsafe bytes.withUnsafeBufferPointer { buffer in
            unsafe String(decoding: UnsafeBufferPointer(rebasing: buffer[(range.lowerBound - base)..<(range.upperBound - base)]), as: UTF8.self)
        }
    }

    /// The bytes at `range` (body offsets inside the slice, checked by the caller), copied.
    func copy(_ range: Range<Int>) -> [UInt8] {
        let base = bytes.startIndex
        return unsafe bytes.withUnsafeBufferPointer { buffer in
            unsafe Array(UnsafeBufferPointer(rebasing: buffer[(range.lowerBound - base)..<(range.upperBound - base)]))
        }
    }
}

extension FixupRunWalk {
    /// The run count a run stream starts with, bounded by its bytes as the walk bounds it,
    /// read through a pointer (no reader made); a count it does not accept is read again by
    /// the checked reader, which names the offset and what is wrong.
    static func runCount(_ runs: ArraySlice<UInt8>, path: String) throws(ClosureError) -> Int {
        let counted: Int? = unsafe runs.withUnsafeBytes { bytes in
            var stream = unsafe UnsafeRawStream(bytes)
            guard let value = stream.uleb(), value <= UInt64((bytes.count - stream.consumed) / minimumRunSize) else { return nil }
            return Int(value)
        }
        if let counted { return counted }
        var reader = FixupStreamReader(runs)
        do throws(FixupFault) {
            return try reader.count(minimumSize: minimumRunSize, else: .runCountTooLarge)
        } catch {
            throw .corrupt(path: path, offset: reader.position, what: "run stream: \(error)")
        }
    }
}
