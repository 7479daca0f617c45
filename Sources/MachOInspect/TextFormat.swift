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

    // Writers: the same formats appended piece by piece to a stream, so a table row costs
    // no concatenated string (each piece is a small, inline string).

    /// `%-*s`: `text`, then blanks up to `width` bytes.
    static func writePadded<Output: TextOutputStream>(_ text: String, _ width: Int, to out: inout Output) {
        out.write(text)
        writeRepeated(blanks, width - text.utf8.count, to: &out)
    }

    /// `%*s`: blanks up to `width` bytes, then `text`.
    static func writePaddedLeft<Output: TextOutputStream>(_ text: String, _ width: Int, to out: inout Output) {
        writeRepeated(blanks, width - text.utf8.count, to: &out)
        out.write(text)
    }

    /// Upper-case hexadecimal, zero-padded to `width` digits.
    static func writeHex<Output: TextOutputStream>(_ value: UInt64, width: Int, to out: inout Output) {
        let digits = String(value, radix: 16, uppercase: true)
        writeRepeated(zeros, width - digits.utf8.count, to: &out)
        out.write(digits)
    }

    /// Runs of one character, 0 to 15 long: small strings, written without allocating.
    private static let blanks = (0...15).map { String(repeating: " ", count: $0) }
    private static let zeros = (0...15).map { String(repeating: "0", count: $0) }

    private static func writeRepeated<Output: TextOutputStream>(_ runs: [String], _ count: Int, to out: inout Output) {
        var remaining = count
        while remaining > 0 {
            let run = min(remaining, runs.count - 1)
            out.write(runs[run])
            remaining -= run
        }
    }
}
