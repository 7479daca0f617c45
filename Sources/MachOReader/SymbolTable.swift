/// `nlist_64`: one entry of the LC_SYMTAB symbol table.
package struct NList64: Equatable, Sendable {
    package static let size = 16
    /// `N_TYPE`: the symbol's kind (`N_UNDF` 0, `N_ABS` 2, `N_SECT` 0xe, `N_PBUD` 0xc, `N_INDR` 0xa).
    package static let typeMask: UInt8 = 0x0e

    /// `n_strx` (the name's offset in the string table), `n_type`, `n_sect` (1-based section
    /// index, 0 for none), `n_desc` and `n_value`.
    package let stringIndex: UInt32, type: UInt8, section: UInt8, desc: UInt16, value: UInt64

    /// Parses the first ``size`` bytes of `view`.
    package init(parsing view: ByteView) throws(MachOError) {
        try view.check(0, NList64.size)
        (stringIndex, type, section, desc, value) = (try view.u32(0), try view.u8(4), try view.u8(5), try view.u16(6), try view.u64(8))
    }

    /// Any `N_STAB` bit (0xe0) makes the entry a debugging (stab) entry.
    package var isStab: Bool { type & 0xe0 != 0 }
    /// `N_UNDF`.
    package var isUndefined: Bool { type & NList64.typeMask == 0 }
}

/// The LC_SYMTAB symbol and string tables of an image, read entry by entry.
package struct SymbolTable: Sendable {
    package let count: Int
    private let entries: ByteView, strings: ByteView

    /// nil when the image has no LC_SYMTAB.
    package init?(image: MachOImage) throws(MachOError) {
        guard let command = image.symtab else { return nil }
        entries = try image.fileBytes(offset: UInt64(command.symbolOffset), size: UInt64(command.symbolCount) * UInt64(NList64.size))
        strings = try image.fileBytes(offset: UInt64(command.stringOffset), size: UInt64(command.stringSize))
        count = Int(command.symbolCount)
    }

    /// Entry `index` (< ``count``).
    package func entry(_ index: Int) throws(MachOError) -> NList64 {
        try NList64(parsing: entries.slice(index * NList64.size, NList64.size))
    }

    /// The name of `entry`: the string table's bytes from its index to the first NUL (or
    /// the table's end). An index past the table is an error at the entry's name field.
    package func name(of entry: NList64) throws(MachOError) -> String {
        let start = Int(entry.stringIndex)
        guard start < strings.count else {
            throw .malformed("symbol name index \(start) is past the \(strings.count)-byte string table", at: strings.absolute(0))
        }
        let end = try strings.firstZero(start, strings.count - start) ?? strings.count
        return try strings.slice(start, end - start).string
    }
}
