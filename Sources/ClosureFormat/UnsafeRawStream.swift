import MachOReader
import LaunchPlan

/// Closure bytes read through a pointer (the fast path's apply loop, the bind-target
/// table): every read compares against the end first, and any malformed number is a nil
/// that sends the caller to its checked reader.
@safe @usableFromInline package struct UnsafeRawStream {
    @usableFromInline let start: UnsafeRawPointer
    @usableFromInline var cursor: UnsafeRawPointer
    @usableFromInline let end: UnsafeRawPointer

    /// An empty buffer has no address: the stream then starts and ends at a placeholder never read.
    @inlinable
    package init(_ bytes: UnsafeRawBufferPointer) {
        unsafe start = unsafe bytes.baseAddress ?? UnsafeRawPointer(bitPattern: MemoryLayout<UInt64>.alignment)!
        unsafe cursor = unsafe start
        unsafe end = unsafe start + bytes.count
    }

    @inlinable package var atEnd: Bool { unsafe cursor == end }

    /// Bytes read so far.
    @inlinable package var consumed: Int { unsafe cursor - start }

    /// Bytes left.
    @inlinable package var remaining: Int { unsafe end - cursor }

    /// Moves past `count` bytes (no more than are left: the caller checked).
    @inlinable
    package mutating func skip(_ count: Int) {
        unsafe cursor += min(count, remaining)
    }

    /// One byte, or nil at the end.
    @inlinable @inline(__always)
    package mutating func u8() -> UInt8? {
        guard unsafe cursor < end else { return nil }
        defer { unsafe cursor += 1 }
        return unsafe cursor.load(as: UInt8.self)
    }

    /// An unsigned LEB128 number, or nil when truncated or over 64 bits.
    @inlinable @inline(__always)
    package mutating func uleb() -> UInt64? {
        guard unsafe cursor < end else { return nil }
        let first = unsafe cursor.load(as: UInt8.self)
        if first < 0x80 {
            unsafe cursor += 1
            return UInt64(first)
        }
        var offset = consumed
        guard case let .value(value) = LEB128.unsigned(at: &offset, { byte(at: $0) }) else { return nil }
        unsafe cursor = unsafe start + offset
        return value
    }

    /// A signed LEB128 number (as its two's-complement bits), or nil when truncated or over 64 bits.
    @inlinable @inline(__always)
    package mutating func sleb() -> UInt64? {
        guard unsafe cursor < end else { return nil }
        let first = unsafe cursor.load(as: UInt8.self)
        if first < 0x80 {
            unsafe cursor += 1
            return UInt64(bitPattern: Int64(Int8(bitPattern: first << 1) >> 1))
        }
        var offset = consumed
        guard case let .value(value) = LEB128.signed(at: &offset, { byte(at: $0) }) else { return nil }
        unsafe cursor = unsafe start + offset
        return UInt64(bitPattern: value)
    }

    /// The byte at `offset` from the stream's start, or nil at or past its end.
    @inlinable @inline(__always)
    func byte(at offset: Int) -> UInt8? {
        guard offset < remaining + consumed else { return nil }
        return unsafe (start + offset).load(as: UInt8.self)
    }
}

/// Strings and small arrays copied out of a ``ClosureReader``'s slice through a pointer, so no
/// reference count is touched: the two threads of a large launch read one body, and each
/// retain would pass a cache line between their cores (docs/performance.md, "The closure read
/// in place"). Ranges are body offsets inside the slice, checked by the caller.
extension ClosureReader {
    /// The bytes at `range` as UTF-8, invalid sequences repaired.
    func utf8String(_ range: Range<Int>) -> String {
        let base = bytes.startIndex
        return unsafe bytes.withUnsafeBufferPointer { buffer in
            unsafe String(decoding: UnsafeBufferPointer(rebasing: buffer[(range.lowerBound - base)..<(range.upperBound - base)]), as: UTF8.self)
        }
    }

    /// The bytes at `range`, copied.
    func copy(_ range: Range<Int>) -> [UInt8] {
        let base = bytes.startIndex
        return unsafe bytes.withUnsafeBufferPointer { buffer in
            unsafe Array(UnsafeBufferPointer(rebasing: buffer[(range.lowerBound - base)..<(range.upperBound - base)]))
        }
    }
}

extension FixupRunWalk {
    /// Runs `body` over a stream reading this walk's bytes: the one place the walk touches them.
    @inlinable @inline(__always)
    func withStream<Value>(_ body: (inout UnsafeRawStream) throws(FixupFault) -> Value) throws(FixupFault) -> Value {
        let outcome: Result<Value, FixupFault> = unsafe runs.withUnsafeBytes { bytes in
            var stream = unsafe UnsafeRawStream(bytes)
            do throws(FixupFault) {
                return .success(try body(&stream))
            } catch {
                return .failure(error)
            }
        }
        return try outcome.get()
    }
}
