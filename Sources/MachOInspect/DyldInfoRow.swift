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
    /// The column-title line and one line per row.
    /// `pointerWidth` is llvm's `2 + 2 * bytes-in-address`: 18 for 64-bit images.
    static func table(_ rows: [DyldInfoRow], pointerWidth: Int = 18) -> String {
        var segmentWidth = width("segment"), sectionWidth = width("section"), addressWidth = width("address")
        var typeWidth = width("rebase"), addendWidth = width("addend"), dylibWidth = width("dylib")
        for row in rows {
            segmentWidth = max(segmentWidth, width(row.segment))
            sectionWidth = max(sectionWidth, width(row.section))
            addressWidth = max(addressWidth, hexLength(row.address) + 2)
            typeWidth = max(typeWidth, width(row.type))
            if let addend = row.addend {
                addendWidth = max(addendWidth, hexLength(UInt64(bitPattern: addend)) + 2)
                dylibWidth = max(dylibWidth, width(row.target))
            }
        }

        var out = Text.pad("segment", segmentWidth) + " " + Text.pad("section", sectionWidth) + " "
            + Text.pad("address", addressWidth) + " " + Text.pad("pointer", pointerWidth) + " "
            + Text.pad("type", typeWidth) + " " + Text.pad("addend", addendWidth) + " "
            + Text.pad("dylib", dylibWidth) + " symbol/vm address\n"
        for row in rows {
            out += Text.pad(row.segment, segmentWidth) + " " + Text.pad(row.section, sectionWidth) + " "
                + "0x" + Text.pad(Text.hex(row.address), addressWidth - 2) + " "
                + "0x" + Text.hex(row.pointer, width: pointerWidth - 2) + " "
                + Text.pad(row.type, typeWidth)
            if let addend = row.addend {
                out += " 0x" + Text.pad(Text.hex(UInt64(bitPattern: addend)), addendWidth - 2) + " "
                    + Text.pad(row.dylib, dylibWidth) + " " + row.target
                    + (row.weakImport ? " (weak import)" : "")
            } else {
                out += String(repeating: " ", count: addendWidth + dylibWidth + 2) + row.target
            }
            out += "\n"
        }
        return out
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
