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
        if try ChainedDyldInfoRows.forEachRow(image, { widths.include($0) }) {
            DyldInfoFormatter.writeTitles(widths, to: &text)
            _ = try ChainedDyldInfoRows.forEachRow(image) { row in
                DyldInfoFormatter.writeRow(row, widths, to: &text)
                text.flushIfFull(to: &out)
            }
        } else {
            let rows = try OpcodeDyldInfoRows(image)
            rows.forEach { widths.include($0) }
            DyldInfoFormatter.writeTitles(widths, to: &text)
            rows.forEach { row in
                DyldInfoFormatter.writeRow(row, widths, to: &text)
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
enum ChainedDyldInfoRows {
    /// Calls `body` with each row in chain order; false when the image has no chained fixups.
    static func forEachRow(_ image: MachOImage, _ body: (DyldInfoRow) -> Void) throws(MachOError) -> Bool {
        guard let fixups = try image.parseChainedFixups() else { return false }
        // Per import, worked out once: llvm's view of it and its library's short name.
        let shortNames = LibraryShortNames(image)
        var shownImports: [(import: ObjdumpChainedImport, dylib: String)] = []
        shownImports.reserveCapacity(fixups.imports.count)
        for entry in fixups.imports {
            let shown = try ObjdumpChainedImport(entry, format: fixups.header.importsFormat, in: fixups)
            shownImports.append((shown, shortNames[shown.libraryOrdinal]))
        }
        var locations = ObjdumpFixupLocations(image)
        let textAddress = image.segments.first(where: { $0.name == "__TEXT" })?.vmAddress ?? 0

        try fixups.forEachFixup(in: image) { (fixup) throws(MachOError) in
            let place = locations.locate(segmentIndex: fixup.segmentIndex, offset: fixup.offsetInSegment)
                ?? fallbackPlace(image, fixup)
            var row = DyldInfoRow(
                segment: place.segment, section: place.section, address: place.address,
                pointer: fixup.rawValue, type: "", addend: nil)
            switch fixup.pointer {
            case let .rebase(rebase):
                row.type = "rebase"
                row.targetAddress = rebasedValue(rebase, textAddress: textAddress)
            case let .authRebase(rebase, _):
                row.type = "auth-rebase"
                row.targetAddress = rebasedValue(rebase, textAddress: textAddress)
            case let .bind(bind), let .authBind(bind, _):
                // The walk has checked the ordinal against the imports table.
                let ordinal = Int(bind.importOrdinal)
                let shown = shownImports[ordinal]
                row.type = fixup.pointer.authentication == nil ? "bind" : "auth-bind"
                row.addend = bind.addend != 0 ? bind.addend : fixups.imports[ordinal].addend
                row.dylib = shown.dylib
                row.symbol = shown.import.name
                row.weakImport = shown.import.weakImport
            case let .nonPointer(value):
                row.type = "value"
                row.targetAddress = UInt64(value)
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

    /// The sections of one of llvm's segments: a run of consecutive sections with the same
    /// segment name.
    private struct Run {
        let segmentName: String
        /// The address of the run's first section, where llvm's segment starts.
        let start: UInt64
        var sectionNames: [String] = []
        var ranges: [(start: UInt64, size: UInt64)] = []
    }

    /// Indexed by llvm's segment number; the lookups search each run's offsets.
    private let runs: [Run?]
    private var lookups: [RangeLookup]

    init(_ image: MachOImage) {
        // llvm's numbering starts at 1 when there is a __PAGEZERO, so its number 0 is empty.
        var runs: [Run?] = image.segments.contains(where: { $0.name == "__PAGEZERO" }) ? [nil] : []
        for section in image.sections {
            if runs.last??.segmentName != section.segmentName {
                runs.append(Run(segmentName: section.segmentName, start: section.address))
            }
            let start = runs[runs.count - 1]!.start
            runs[runs.count - 1]!.sectionNames.append(section.name)
            runs[runs.count - 1]!.ranges.append((section.address &- start, section.size))
        }
        self.runs = runs
        lookups = runs.map { RangeLookup($0?.ranges ?? []) }
    }

    /// The place of `offset` in segment `segmentIndex`, or nil when no section holds it.
    mutating func locate(segmentIndex: Int, offset: UInt64) -> Place? {
        guard segmentIndex >= 0, segmentIndex < runs.count, let run = runs[segmentIndex],
              let index = lookups[segmentIndex].index(of: offset) else { return nil }
        return Place(segment: run.segmentName, section: run.sectionNames[index], address: run.start &+ offset)
    }
}
