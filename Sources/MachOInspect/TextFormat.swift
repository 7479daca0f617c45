/// printf-style formatting shared by the tables: widths count bytes, as printf does.
enum Text {
    /// Upper-case hexadecimal, zero-padded to `width` digits.
    static func hex(_ value: UInt64, width: Int = 0) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }

    /// `text` left-aligned: padded with blanks on the right to `width` bytes (`%-*s`).
    static func pad(_ text: String, _ width: Int) -> String {
        let count = text.utf8.count
        return count >= width ? text : text + String(repeating: " ", count: width - count)
    }

    /// `text` right-aligned: padded with blanks on the left to `width` bytes (`%*s`).
    static func padLeft(_ text: String, _ width: Int) -> String {
        let count = text.utf8.count
        return count >= width ? text : String(repeating: " ", count: width - count) + text
    }
}

/// A table's text on its way out: rows are formatted byte by byte into one reusable buffer,
/// which goes to the output stream as one string of about ``chunkSize`` bytes at a time. A
/// row costs no string of its own, the stream sees a few calls per 64 KiB, and the memory
/// is the buffer's, whatever the table's length.
///
/// Only whole strings and ASCII are appended, and chunks end between rows, so every chunk
/// is valid UTF-8.
struct TextBuffer {
    /// Bytes held before ``flushIfFull(to:)`` hands them over.
    static let chunkSize = 64 * 1024
    private var bytes: [UInt8] = []

    init() {
        bytes.reserveCapacity(Self.chunkSize + 4096)
    }

    /// Hands the buffer to `out` once it holds a chunk; tables call this after each row.
    @inline(__always)
    mutating func flushIfFull<Output: TextOutputStream>(to out: inout Output) {
        if bytes.count >= Self.chunkSize { flush(to: &out) }
    }

    /// Hands whatever the buffer holds to `out`.
    mutating func flush<Output: TextOutputStream>(to out: inout Output) {
        guard !bytes.isEmpty else { return }
        out.write(String(decoding: bytes, as: UTF8.self))
        bytes.removeAll(keepingCapacity: true)
    }

    // MARK: Pieces

    /// `text` as it is (`%s`).
    @inline(__always)
    mutating func write(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    /// One ASCII character.
    @inline(__always)
    mutating func write(ascii: UInt8) {
        bytes.append(ascii)
    }

    /// `count` blanks (none when `count` is not positive).
    mutating func blanks(_ count: Int) {
        if count > 0 { bytes.append(contentsOf: repeatElement(UInt8(ascii: " "), count: count)) }
    }

    /// `%-*s`: `text`, then blanks up to `width` bytes.
    mutating func padded(_ text: String, _ width: Int) {
        write(text)
        blanks(width - text.utf8.count)
    }

    /// `%*s`: blanks up to `width` bytes, then `text`.
    mutating func paddedLeft(_ text: String, _ width: Int) {
        blanks(width - text.utf8.count)
        write(text)
    }

    /// Hexadecimal digits of `value`, zero-padded to `width` digits (`%0*llX`, or `%llx`
    /// with `uppercase` false).
    mutating func hex(_ value: UInt64, width: Int = 0, uppercase: Bool = true) {
        let digits = Self.hexDigitCount(value)
        for _ in digits..<max(digits, width) { bytes.append(UInt8(ascii: "0")) }
        let letterBase = uppercase ? UInt8(ascii: "A") - 10 : UInt8(ascii: "a") - 10
        var shift = (digits - 1) * 4
        while shift >= 0 {
            let digit = UInt8(truncatingIfNeeded: value >> UInt64(shift)) & 0xF
            bytes.append(digit < 10 ? UInt8(ascii: "0") + digit : letterBase + digit)
            shift -= 4
        }
    }

    /// Decimal digits of `value` (`%llu`).
    mutating func decimal(_ value: UInt64) {
        var divisor: UInt64 = 1
        while value / divisor >= 10 { divisor *= 10 }
        var rest = value
        while divisor > 0 {
            bytes.append(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: rest / divisor))
            rest %= divisor
            divisor /= 10
        }
    }

    /// `value` in decimal with a leading `-` when negative (`%lld`).
    mutating func decimal(_ value: Int64) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        decimal(value.magnitude)
    }

    /// `%*lld`: `value` in decimal, right-aligned in `width` bytes.
    mutating func decimal(_ value: Int64, width: Int) {
        blanks(width - Self.decimalLength(value))
        decimal(value)
    }

    /// Number of hexadecimal digits of `value` (1 for 0).
    static func hexDigitCount(_ value: UInt64) -> Int {
        value == 0 ? 1 : (67 - value.leadingZeroBitCount) / 4
    }

    /// Bytes of `value` in decimal, sign included.
    static func decimalLength(_ value: Int64) -> Int {
        var length = value < 0 ? 2 : 1
        var rest = value.magnitude
        while rest >= 10 {
            rest /= 10
            length += 1
        }
        return length
    }
}
