/// A table's text on its way out: rows are formatted byte by byte into one reusable buffer,
/// which goes to the output stream as one string of about ``chunkSize`` bytes at a time. A
/// row costs no string of its own, the stream sees one call per 64 KiB, and the memory is
/// the buffer's whatever the table's length (a single piece longer than the buffer, such
/// as a huge symbol name, grows it to that piece's size).
///
/// Only whole strings and ASCII are appended, and chunks end between rows, so every chunk
/// is valid UTF-8. The buffer is a local of one table's writer: copies of it share the
/// memory, so it is never copied.
@safe struct TextBuffer {
    /// Bytes held before ``flushIfFull(to:)`` hands them over.
    static let chunkSize = 64 * 1024

    /// Owns the memory and frees it with the last reference.
    @safe private final class Memory {
        var start: UnsafeMutablePointer<UInt8>, capacity: Int

        init(capacity: Int) {
            unsafe start = .allocate(capacity: capacity)
            self.capacity = capacity
        }

        deinit { unsafe start.deallocate() }

        /// Makes room for at least `capacity` bytes, keeping the first `count`.
        func grow(to capacity: Int, keeping count: Int) {
            let larger = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)
            unsafe larger.update(from: start, count: count)
            unsafe start.deallocate()
            unsafe start = unsafe larger
            self.capacity = capacity
        }
    }

    private let memory = Memory(capacity: chunkSize + 4096)
    /// Cached from `memory` (they change only in ``reserve(_:)``).
    private var start: UnsafeMutablePointer<UInt8>, capacity: Int
    private var count = 0

    init() {
        unsafe start = unsafe memory.start
        capacity = memory.capacity
    }

    /// Hands the buffer to `out` once it holds a chunk; tables call this after each row.
    @inline(__always)
    mutating func flushIfFull<Output: TextOutputStream>(to out: inout Output) {
        if count >= Self.chunkSize { flush(to: &out) }
    }

    /// Hands whatever the buffer holds to `out`.
    mutating func flush<Output: TextOutputStream>(to out: inout Output) {
        guard count > 0 else { return }
        unsafe out.write(String(decoding: UnsafeBufferPointer(start: start, count: count), as: UTF8.self))
        count = 0
    }

    /// Room for `more` bytes past `count`.
    @inline(__always)
    private mutating func reserve(_ more: Int) {
        if more > capacity - count { grow(more) }
    }

    private mutating func grow(_ more: Int) {
        memory.grow(to: max(capacity * 2, count + more), keeping: count)
        unsafe start = unsafe memory.start
        capacity = memory.capacity
    }

    // MARK: Pieces

    /// `text` as it is (`%s`).
    @inline(__always)
    mutating func write(_ text: String) {
        var text = text
        text.withUTF8 { utf8 in
            guard let source = utf8.baseAddress else { return }
            reserve(utf8.count)
            unsafe (start + count).update(from: source, count: utf8.count)
            count += utf8.count
        }
    }

    /// One ASCII character.
    @inline(__always)
    mutating func write(ascii: UInt8) {
        reserve(1)
        unsafe start[count] = ascii
        count += 1
    }

    /// `count` blanks (none when `count` is not positive).
    @inline(__always)
    mutating func blanks(_ blanks: Int) {
        guard blanks > 0 else { return }
        reserve(blanks)
        unsafe (start + count).initialize(repeating: UInt8(ascii: " "), count: blanks)
        count += blanks
    }

    /// `%-*s`: `text`, then blanks up to `width` bytes.
    mutating func padded(_ text: String, _ width: Int) {
        write(text)
        blanks(width - text.utf8.count)
    }

    /// `%-*s `: a ``padded(_:_:)`` column and the blank after it.
    mutating func column(_ text: String, _ width: Int) {
        padded(text, width)
        write(ascii: UInt8(ascii: " "))
    }

    /// Hexadecimal digits of `value`, zero-padded to `width` digits (`%0*llX`, or `%0*llx`
    /// with `uppercase` false).
    mutating func hex(_ value: UInt64, width: Int = 0, uppercase: Bool = true) {
        let digits = Self.hexDigitCount(value)
        let length = max(digits, width)
        reserve(length)
        let letterBase = uppercase ? UInt8(ascii: "A") - 10 : UInt8(ascii: "a") - 10
        var rest = value
        var position = count + length
        for _ in 0..<digits {
            position -= 1
            let digit = UInt8(truncatingIfNeeded: rest) & 0xF
            unsafe start[position] = digit < 10 ? UInt8(ascii: "0") + digit : letterBase + digit
            rest >>= 4
        }
        unsafe (start + count).initialize(repeating: UInt8(ascii: "0"), count: length - digits)
        count += length
    }

    /// Decimal digits of `value` (`%llu`).
    mutating func decimal(_ value: UInt64) {
        let length = Self.decimalLength(value)
        reserve(length)
        var rest = value
        var position = count + length
        repeat {
            position -= 1
            unsafe start[position] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: rest % 10)
            rest /= 10
        } while rest != 0
        count += length
    }

    /// `value` in decimal with a leading `-` when negative (`%lld`).
    mutating func decimal(_ value: Int64) {
        if value < 0 { write(ascii: UInt8(ascii: "-")) }
        decimal(value.magnitude)
    }

    /// `%*lld`: `value` in decimal, right-aligned in `width` bytes.
    mutating func decimal(_ value: Int64, width: Int) {
        blanks(width - Self.decimalLength(value.magnitude) - (value < 0 ? 1 : 0))
        decimal(value)
    }

    /// Number of hexadecimal digits of `value` (1 for 0).
    static func hexDigitCount(_ value: UInt64) -> Int { value == 0 ? 1 : (67 - value.leadingZeroBitCount) / 4 }

    /// Number of decimal digits of `value`.
    static func decimalLength(_ value: UInt64) -> Int {
        var length = 1
        var rest = value
        while rest >= 10 {
            rest /= 10
            length += 1
        }
        return length
    }
}
