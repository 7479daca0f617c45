/// One row of the `--dyld-info` table: a fixup at one location, rebase-like (no addend, the
/// target is a vm address) or bind-like (an addend, a dylib and a symbol).
struct DyldInfoRow: Equatable, Sendable {
    var segment: String, section: String
    /// The fixup's vm address.
    var address: UInt64
    /// The raw on-disk 64-bit value at that address.
    var pointer: UInt64
    /// `rebase`, `bind`, ...
    var type: String
    /// Set for bind-like rows; nil for rebase-like rows.
    var addend: Int64?
    /// The dylib's short name (bind-like rows).
    var dylib: String = ""
    /// The symbol name (bind-like rows).
    var symbol: String = ""
    /// The target vm address (rebase-like rows), printed in hex.
    var targetAddress: UInt64 = 0
    /// Prints " (weak import)" after the symbol.
    var weakImport: Bool = false
    /// The bind's library ordinal (bind-like rows of opcode streams; 0 otherwise).
    var libraryOrdinal: Int = 0
}

/// Lays out `--dyld-info` rows with llvm-objdump 19's column rules (PrintDyldInfo):
/// every column is as wide as its title or its widest value, except that the addend and
/// dylib columns only count bind-like rows, and the dylib column is sized from the
/// symbol names rather than the dylib names, as llvm-objdump does.
enum DyldInfoFormatter {
    /// The columns' widths, grown row by row.
    struct Widths {
        var segment = width("segment"), section = width("section"), address = width("address")
        var type = width("rebase"), addend = width("addend"), dylib = width("dylib")
        /// llvm's `2 + 2 * bytes-in-address`: 18 for 64-bit images.
        var pointer = 18

        mutating func include(_ row: DyldInfoRow) {
            include(segment: row.segment, section: row.section, address: row.address, type: row.type,
                    addend: row.addend, symbol: row.symbol)
        }

        /// ``include(_:)`` from a row's fields, without making the row.
        mutating func include(segment: String, section: String, address: UInt64, type: String, addend: Int64?, symbol: String) {
            self.segment = max(self.segment, width(segment))
            self.section = max(self.section, width(section))
            self.address = max(self.address, hexLength(address) + 2)
            self.type = max(self.type, width(type))
            if let addend {
                self.addend = max(self.addend, hexLength(UInt64(bitPattern: addend)) + 2)
                dylib = max(dylib, width(symbol))
            }
        }
    }

    /// The column-title line.
    static func writeTitles(_ widths: Widths, to text: inout TextBuffer) {
        let columns = [
            ("segment", widths.segment), ("section", widths.section), ("address", widths.address), ("pointer", widths.pointer),
            ("type", widths.type), ("addend", widths.addend), ("dylib", widths.dylib),
        ]
        for (title, width) in columns { text.column(title, width) }
        text.write("symbol/vm address\n")
    }

    /// One row's line.
    static func writeRow(_ row: DyldInfoRow, _ widths: Widths, to text: inout TextBuffer) {
        text.column(row.segment, widths.segment)
        text.padded(row.section, widths.section)
        text.write(" 0x")
        text.hex(row.address)
        text.blanks(widths.address - 2 - TextBuffer.hexDigitCount(row.address))
        text.write(" 0x")
        text.hex(row.pointer, width: widths.pointer - 2)
        text.write(" ")
        text.padded(row.type, widths.type)
        if let addend = row.addend {
            let bits = UInt64(bitPattern: addend)
            text.write(" 0x")
            text.hex(bits)
            text.blanks(widths.addend - 2 - TextBuffer.hexDigitCount(bits))
            text.write(" ")
            text.column(row.dylib, widths.dylib)
            text.write(row.symbol)
            if row.weakImport { text.write(" (weak import)") }
        } else {
            text.blanks(widths.addend + widths.dylib + 2)
            text.write("0x")
            text.hex(row.targetAddress)
        }
        text.write(ascii: UInt8(ascii: "\n"))
    }

    /// llvm's hex digit estimate: ceil(floor(log2(n)) / 4), and 1 for 0. It is one short
    /// when the leading hex digit is 1, which only changes padding.
    static func hexLength(_ value: UInt64) -> Int {
        guard value != 0 else { return 1 }
        let log2 = 63 - value.leadingZeroBitCount
        return (log2 + 3) / 4
    }

    private static func width(_ text: String) -> Int { text.utf8.count }
}
