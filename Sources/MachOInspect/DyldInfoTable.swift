import MachOReader

/// `--dyld-info`: every fixup with its on-disk pointer, laid out as
/// `llvm-objdump-19 --macho --dyld-info` lays it out. For chained fixups the rows are the
/// ones llvm-objdump prints; for opcode-based fixups, where llvm-objdump 19 prints only the
/// column titles, this adds the rows the opcodes describe.
///
/// Column widths depend on every row, so chained fixups are walked twice: once to size
/// the columns, once to print, and no row is kept. Opcode rows are printed in address
/// order, which the streams do not follow, so those are collected and sorted first.
enum DyldInfoTable {
    static func write<Output: TextOutputStream>(_ image: MachOImage, to out: inout Output) throws(MachOError) {
        var text = TextBuffer()
        defer { text.flush(to: &out) }
        text.write("dyld information:\n")
        var widths = DyldInfoFormatter.Widths()
        if var rows = try ChainedDyldInfoRows(image) {
            try rows.forEach { widths.include($0) }
            DyldInfoFormatter.writeTitles(widths, to: &text)
            try rows.forEach { row in
                DyldInfoFormatter.writeRow(row, widths, to: &text)
                text.flushIfFull(to: &out)
            }
        } else {
            let rows = try OpcodeDyldInfoRows(image)
            DyldInfoFormatter.writeTitles(rows.widths, to: &text)
            rows.forEach { row in
                DyldInfoFormatter.writeRow(row, rows.widths, to: &text)
                text.flushIfFull(to: &out)
            }
        }
    }
}

/// `--dyld-info` rows of an image with chained fixups, in chain order, with llvm-objdump's
/// readings: a bind's addend is the pointer's inline addend when non-zero, else the
/// import's; the symbol, weak flag and ordinal are llvm's view of the import (see
/// ``ObjdumpChainedImport``); a rebase of an image-offset format prints `__TEXT`'s vmaddr
/// plus the target, with the high byte on top.
///
/// The blob is parsed once; each ``forEach(_:)`` walks the chains again, so no row is kept.
struct ChainedDyldInfoRows {
    private let image: MachOImage, fixups: ChainedFixups
    /// Per import, worked out once: llvm's view of it and its library's short name.
    private let shownImports: [(import: ObjdumpChainedImport, dylib: String)]
    private var locations: FixupPlaces
    private let textAddress: UInt64

    /// Nil when the image has no chained fixups.
    init?(_ image: MachOImage) throws(MachOError) {
        guard let fixups = try image.parseChainedFixups() else { return nil }
        self.image = image
        self.fixups = fixups
        let shortNames = LibraryShortNames(image)
        shownImports = try fixups.imports.map { (entry) throws(MachOError) in
            let shown = try ObjdumpChainedImport(entry, format: fixups.header.importsFormat, in: fixups)
            return (shown, shortNames[shown.libraryOrdinal])
        }
        locations = FixupPlaces(sectionRunsOf: image)
        textAddress = image.segments.first(where: { $0.name == "__TEXT" })?.vmAddress ?? 0
    }

    /// Calls `body` with each row in chain order.
    mutating func forEach(_ body: (DyldInfoRow) -> Void) throws(MachOError) {
        let image = image, fixups = fixups, shownImports = shownImports, textAddress = textAddress
        try fixups.forEachFixup(in: image) { (fixup) throws(MachOError) in
            // Where llvm-objdump's lookup finds nothing: the fixup's own segment, no section.
            let place = locations.locate(segmentIndex: fixup.segmentIndex, offset: fixup.offsetInSegment)
                ?? FixupPlaces.Place(segmentName: image.segments[fixup.segmentIndex].name, sectionName: "", address: fixup.address)
            var row = DyldInfoRow(
                segment: place.segmentName, section: place.sectionName, address: place.address,
                pointer: fixup.rawValue, type: "", addend: nil)
            switch fixup.pointer {
            case let .rebase(rebase):
                row.type = "rebase"
                row.targetAddress = Self.rebasedValue(rebase, textAddress: textAddress)
            case let .authRebase(rebase, _):
                row.type = "auth-rebase"
                row.targetAddress = Self.rebasedValue(rebase, textAddress: textAddress)
            case let .bind(bind), let .authBind(bind, _):
                // The walk has checked the ordinal against the imports table.
                let ordinal = Int(bind.importOrdinal)
                row.type = fixup.pointer.authentication == nil ? "bind" : "auth-bind"
                row.addend = bind.addend != 0 ? bind.addend : fixups.imports[ordinal].addend
                row.dylib = shownImports[ordinal].dylib
                row.symbol = shownImports[ordinal].import.name
                row.weakImport = shownImports[ordinal].import.weakImport
            case let .nonPointer(value):
                row.type = "value"
                row.targetAddress = UInt64(value)
            }
            body(row)
        }
    }

    private static func rebasedValue(_ rebase: ChainedRebase, textAddress: UInt64) -> UInt64 {
        (rebase.kind == .vmAddress ? rebase.target : rebase.target &+ textAddress) | UInt64(rebase.high8) << 56
    }
}
