/// One row of the `--dyld-info` table: a fixup at one location, rebase-like (no addend, the
/// target is a vm address) or bind-like (an addend, a dylib and a symbol).
struct DyldInfoRow: Equatable, Sendable {
    var segment: String
    var section: String
    /// The fixup's vm address.
    var address: UInt64
    /// The raw on-disk 64-bit value at that address.
    var pointer: UInt64
    /// `rebase`, `bind`, ...
    var type: String
    /// Set for bind-like rows; nil for rebase-like rows.
    var addend: Int64?
    /// The dylib's short name (bind-like rows).
    var dylib: String
    /// The symbol name (bind-like rows) or the target vm address as text (rebase-like rows).
    var target: String
    /// Prints " (weak import)" after the symbol.
    var weakImport: Bool = false
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
            segment = max(segment, width(row.segment))
            section = max(section, width(row.section))
            address = max(address, hexLength(row.address) + 2)
            type = max(type, width(row.type))
            if let rowAddend = row.addend {
                addend = max(addend, hexLength(UInt64(bitPattern: rowAddend)) + 2)
                dylib = max(dylib, width(row.target))
            }
        }
    }

    /// The column-title line.
    static func writeTitles<Output: TextOutputStream>(_ widths: Widths, to out: inout Output) {
        out.write(Text.pad("segment", widths.segment) + " " + Text.pad("section", widths.section) + " "
            + Text.pad("address", widths.address) + " " + Text.pad("pointer", widths.pointer) + " "
            + Text.pad("type", widths.type) + " " + Text.pad("addend", widths.addend) + " "
            + Text.pad("dylib", widths.dylib) + " symbol/vm address\n")
    }

    /// One row's line.
    static func writeRow<Output: TextOutputStream>(_ row: DyldInfoRow, _ widths: Widths, to out: inout Output) {
        var line = Text.pad(row.segment, widths.segment) + " " + Text.pad(row.section, widths.section) + " "
            + "0x" + Text.pad(Text.hex(row.address), widths.address - 2) + " "
            + "0x" + Text.hex(row.pointer, width: widths.pointer - 2) + " "
            + Text.pad(row.type, widths.type)
        if let addend = row.addend {
            line += " 0x" + Text.pad(Text.hex(UInt64(bitPattern: addend)), widths.addend - 2) + " "
                + Text.pad(row.dylib, widths.dylib) + " " + row.target
                + (row.weakImport ? " (weak import)" : "")
        } else {
            line += String(repeating: " ", count: widths.addend + widths.dylib + 2) + row.target
        }
        line += "\n"
        out.write(line)
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
