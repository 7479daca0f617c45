/// `dyld_chained_fixups_header.imports_format`: the layout of the chained imports table.
package enum ChainedImportFormat: UInt32, Equatable, Hashable, Sendable, CaseIterable {
    /// `DYLD_CHAINED_IMPORT`: 32 bits, 8-bit library ordinal, no addend.
    case plain = 1
    /// `DYLD_CHAINED_IMPORT_ADDEND`: 8-bit library ordinal and a 32-bit signed addend.
    case addend = 2
    /// `DYLD_CHAINED_IMPORT_ADDEND64`: 16-bit library ordinal, 32-bit name offset and a
    /// 64-bit addend.
    case addend64 = 3

    /// The C name, e.g. `DYLD_CHAINED_IMPORT_ADDEND`.
    package var name: String { ["DYLD_CHAINED_IMPORT", "DYLD_CHAINED_IMPORT_ADDEND", "DYLD_CHAINED_IMPORT_ADDEND64"][Int(rawValue) - 1] }
    /// Bytes per table entry: 4, 8 or 16.
    package var entrySize: Int { 2 << rawValue }
}

/// One chained import: the symbol a bind with this import ordinal binds to, its entry's
/// fields read as its own (`entry.addend` as `import.addend`).
@dynamicMemberLookup
package struct ChainedImport: Equatable, Sendable {
    package let entry: ChainedImportEntry, name: String

    package subscript<Value>(dynamicMember field: KeyPath<ChainedImportEntry, Value>) -> Value { entry[keyPath: field] }

    /// The imports table described by `header` inside the fixups blob `blob`.
    static func parseTable(_ blob: ByteView, header: ChainedFixupsHeader) throws(MachOError) -> [ChainedImport] {
        let table = try ChainedImportTable(blob, header: header)
        return try (0..<table.count).map { (index) throws(MachOError) in
            let fields = try table.entry(index)
            return ChainedImport(entry: fields, name: try table.name(of: fields, index: index).string)
        }
    }
}

extension ChainedImport {
    /// Parses one entry of `format` at the start of `entry`; names come from `symbols`.
    package init(parsing entry: ByteView, format: ChainedImportFormat, symbols: ByteView) throws(MachOError) {
        let fields = try ChainedImportEntry(parsing: entry, at: 0, format: format)
        self.init(entry: fields, name: try ChainedImportTable.nameBytes(at: fields.nameOffset, in: symbols, for: entry.base).string)
    }
}

/// The fields of one chained import, its name left in the symbols pool.
package struct ChainedImportEntry: Equatable, Sendable {
    /// The library ordinal: 1-based index into the image's dependencies, or a special
    /// ordinal (0 this image, -1 main executable, -2 flat lookup, -3 weak lookup). Encoded
    /// values above 0xF0 (0xFFF0 for `addend64`) are negative, as dyld reads them.
    package let libraryOrdinal: Int
    /// A missing symbol binds to 0 instead of failing the load.
    package let weakImport: Bool
    /// Offset of the name in the symbols pool.
    package let nameOffset: UInt32
    /// Added to the symbol's address (0 for `DYLD_CHAINED_IMPORT`).
    package let addend: Int64
    /// The entry's first word as stored (32 bits, or 64 for `addend64`), for tools that
    /// show the raw encoding.
    package let rawValue: UInt64

    /// Parses one entry of `format` at `offset` of `table`.
    init(parsing table: ByteView, at offset: Int, format: ChainedImportFormat) throws(MachOError) {
        try table.check(offset, format.entrySize)
        switch format {
        case .plain, .addend:
            let word = try table.u32(offset)
            let ordinal = UInt8(truncatingIfNeeded: word)
            libraryOrdinal = ordinal > 0xF0 ? Int(Int8(bitPattern: ordinal)) : Int(ordinal)
            weakImport = (word >> 8) & 1 == 1
            nameOffset = word >> 9
            addend = format == .addend ? Int64(Int32(bitPattern: try table.u32(offset + 4))) : 0
            rawValue = UInt64(word)
        case .addend64:
            let word = try table.u64(offset)
            let ordinal = UInt16(truncatingIfNeeded: word)
            libraryOrdinal = ordinal > 0xFFF0 ? Int(Int16(bitPattern: ordinal)) : Int(ordinal)
            weakImport = (word >> 16) & 1 == 1
            nameOffset = UInt32(truncatingIfNeeded: word >> 32)
            addend = Int64(bitPattern: try table.u64(offset + 8))
            rawValue = word
        }
    }
}

/// The chained imports table read in place: entries decoded one at a time, names handed
/// out as bytes of the symbols pool. What a loader needs on every launch, with no string
/// made; ``ChainedImport/parseTable(_:header:)`` builds the named list from it.
package struct ChainedImportTable: Sendable {
    package let format: ChainedImportFormat
    /// `imports_count`.
    package let count: Int
    /// The table's bytes.
    private let entries: ByteView
    /// The symbols pool: from `symbols_offset` to the end of the blob.
    private let symbols: ByteView

    /// The table `header` describes inside the fixups blob `blob`, its extent checked
    /// before anything is read.
    package init(_ blob: ByteView, header: ChainedFixupsHeader) throws(MachOError) {
        format = header.importsFormat
        guard UInt64(header.importsOffset) <= UInt64(blob.count) else {
            throw MachOError.malformed(
                "imports_offset \(header.importsOffset) is past the \(blob.count)-byte chained fixups blob",
                at: blob.absolute(ChainedFixupsHeader.Field.importsOffset))
        }
        let tableSize = UInt64(header.importsCount) * UInt64(format.entrySize)
        guard tableSize <= UInt64(blob.count) - UInt64(header.importsOffset) else {
            throw MachOError.malformed(
                "imports_count \(header.importsCount) at imports_offset \(header.importsOffset) needs \(tableSize) bytes, "
                    + "more than the \(blob.count)-byte chained fixups blob holds",
                at: blob.absolute(ChainedFixupsHeader.Field.importsCount))
        }
        guard UInt64(header.symbolsOffset) <= UInt64(blob.count) else {
            throw MachOError.malformed(
                "symbols_offset \(header.symbolsOffset) is past the \(blob.count)-byte chained fixups blob",
                at: blob.absolute(ChainedFixupsHeader.Field.symbolsOffset))
        }
        count = Int(header.importsCount)
        entries = try blob.slice(Int(header.importsOffset), Int(tableSize))
        symbols = try blob.slice(Int(header.symbolsOffset), blob.count - Int(header.symbolsOffset))
    }

    /// Entry `index` (below ``count``).
    package func entry(_ index: Int) throws(MachOError) -> ChainedImportEntry {
        try ChainedImportEntry(parsing: entries, at: index * format.entrySize, format: format)
    }

    /// The name of `entry` (entry `index` of the table): its bytes in the symbols pool.
    package func name(of entry: ChainedImportEntry, index: Int) throws(MachOError) -> ByteView {
        try Self.nameBytes(at: entry.nameOffset, in: symbols, for: entries.absolute(index * format.entrySize))
    }

    /// The NUL-terminated name at `offset` of `symbols`; `entryOffset` (absolute) names
    /// the entry in errors.
    static func nameBytes(at offset: UInt32, in symbols: ByteView, for entryOffset: Int) throws(MachOError) -> ByteView {
        guard UInt64(offset) < UInt64(symbols.count) else {
            throw MachOError.malformed("chained import name_offset \(offset) is past the \(symbols.count)-byte symbols pool", at: entryOffset)
        }
        return try symbols.cStringBytes(Int(offset))
    }
}
