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
        out.write("dyld information:\n")
        var widths = DyldInfoFormatter.Widths()
        if try ChainedDyldInfoRows.forEachRow(image, { widths.include($0) }) {
            DyldInfoFormatter.writeTitles(widths, to: &out)
            _ = try ChainedDyldInfoRows.forEachRow(image) { DyldInfoFormatter.writeRow($0, widths, to: &out) }
        } else {
            let rows = try OpcodeDyldInfoRows.rows(image)
            for row in rows { widths.include(row) }
            DyldInfoFormatter.writeTitles(widths, to: &out)
            for row in rows { DyldInfoFormatter.writeRow(row, widths, to: &out) }
        }
    }
}

/// `--dyld-info` rows of an image with chained fixups, in chain order, with llvm-objdump's
/// readings: a bind's addend is the pointer's inline addend when non-zero, else the
/// import's; the symbol, weak flag and ordinal are llvm's view of the import (see
/// ``ObjdumpChainedImport``); a rebase of an image-offset format prints `__TEXT`'s vmaddr
/// plus the target, with the high byte on top.
enum ChainedDyldInfoRows {
    /// Calls `body` with each row in chain order; false when the image has no chained fixups.
    static func forEachRow(_ image: MachOImage, _ body: (DyldInfoRow) -> Void) throws(MachOError) -> Bool {
        guard let fixups = try image.parseChainedFixups() else { return false }
        var shownImports: [ObjdumpChainedImport] = []
        shownImports.reserveCapacity(fixups.imports.count)
        for entry in fixups.imports {
            shownImports.append(try ObjdumpChainedImport(entry, format: fixups.header.importsFormat, in: fixups))
        }
        let locations = ObjdumpFixupLocations(image)
        let textAddress = image.segments.first(where: { $0.name == "__TEXT" })?.vmAddress ?? 0

        try fixups.forEachFixup(in: image) { (fixup) throws(MachOError) in
            let place = locations.locate(segmentIndex: fixup.segmentIndex, offset: fixup.offsetInSegment)
                ?? fallbackPlace(image, fixup)
            var row = DyldInfoRow(
                segment: place.segment, section: place.section, address: place.address,
                pointer: fixup.rawValue, type: "", addend: nil, dylib: "", target: "")
            switch fixup.pointer {
            case let .rebase(rebase):
                row.type = "rebase"
                row.target = "0x" + Text.hex(rebasedValue(rebase, textAddress: textAddress))
            case let .authRebase(rebase, _):
                row.type = "auth-rebase"
                row.target = "0x" + Text.hex(rebasedValue(rebase, textAddress: textAddress))
            case let .bind(bind), let .authBind(bind, _):
                // The walk has checked the ordinal against the imports table.
                let ordinal = Int(bind.importOrdinal)
                let shown = shownImports[ordinal]
                row.type = fixup.pointer.authentication == nil ? "bind" : "auth-bind"
                row.addend = bind.addend != 0 ? bind.addend : fixups.imports[ordinal].addend
                row.dylib = LibraryShortName.forOrdinal(shown.libraryOrdinal, in: image)
                row.target = shown.name
                row.weakImport = shown.weakImport
            case let .nonPointer(value):
                row.type = "value"
                row.target = "0x" + Text.hex(UInt64(value))
            }
            body(row)
        }
        return true
    }

    private static func rebasedValue(_ rebase: ChainedRebase, textAddress: UInt64) -> UInt64 {
        (rebase.kind == .vmAddress ? rebase.target : rebase.target &+ textAddress) | UInt64(rebase.high8) << 56
    }

    /// Where llvm-objdump's lookup finds nothing: the fixup's own segment, no section.
    private static func fallbackPlace(_ image: MachOImage, _ fixup: ChainedFixup) -> ObjdumpFixupLocations.Place {
        ObjdumpFixupLocations.Place(
            segment: image.segments[fixup.segmentIndex].name, section: "", address: fixup.address)
    }
}

/// llvm-objdump's way of naming a fixup's place from a segment index and offset (its
/// BindRebaseSegInfo): segments are numbered by walking the sections and counting changes
/// of segment name, starting from 1 when the image has `__PAGEZERO`, and a segment starts
/// at the address of its first section. For the usual layouts this is the load-command
/// segment and its vmaddr.
struct ObjdumpFixupLocations {
    /// A fixup's segment name, section name and address.
    struct Place {
        let segment: String
        let section: String
        let address: UInt64
    }

    private struct Entry {
        let section: Section
        let segmentIndex: Int
        let offsetInSegment: UInt64
        let segmentStart: UInt64
    }

    private let entries: [Entry]

    init(_ image: MachOImage) {
        var index = image.segments.contains(where: { $0.name == "__PAGEZERO" }) ? 1 : 0
        var currentName: String?
        var currentStart: UInt64 = 0
        var entries: [Entry] = []
        for section in image.sections {
            if section.segmentName != currentName {
                index += 1
                currentName = section.segmentName
                currentStart = section.address
            }
            entries.append(Entry(
                section: section, segmentIndex: index - 1,
                offsetInSegment: section.address &- currentStart, segmentStart: currentStart))
        }
        self.entries = entries
    }

    /// The place of `offset` in segment `segmentIndex`, or nil when no section holds it.
    func locate(segmentIndex: Int, offset: UInt64) -> Place? {
        guard let entry = entries.first(where: {
            $0.segmentIndex == segmentIndex && $0.offsetInSegment <= offset
                && offset - $0.offsetInSegment < $0.section.size
        }) else { return nil }
        let segmentName = entries.first(where: { $0.segmentIndex == segmentIndex })?.section.segmentName ?? ""
        return Place(segment: segmentName, section: entry.section.name, address: entry.segmentStart &+ offset)
    }
}
