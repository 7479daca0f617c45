/// printf-style formatting shared by the tables: widths count bytes, as printf does.
enum Text {
    /// Hexadecimal (upper-case unless `uppercase` is false), zero-padded to `width` digits.
    static func hex(_ value: UInt64, width: Int = 0, uppercase: Bool = true) -> String {
        let digits = String(value, radix: 16, uppercase: uppercase)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }

    /// `text` left-aligned: padded with blanks on the right to `width` bytes (`%-*s`).
    static func pad(_ text: String, _ width: Int) -> String {
        let count = text.utf8.count
        return count >= width ? text : text + String(repeating: " ", count: width - count)
    }
}
