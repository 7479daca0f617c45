import MachOReader

/// `--chained-fixups`: the LC_DYLD_CHAINED_FIXUPS structures, printed as
/// `llvm-objdump-19 --macho --chained-fixups` prints them (nothing for an image without them).
enum ChainedFixupsTable {
    static func write<Output: TextOutputStream>(_ image: MachOImage, to out: inout Output) throws(MachOError) {
        guard let fixups = try image.parseChainedFixups() else { return }
        let header = fixups.header
        out.write("chained fixups header (LC_DYLD_CHAINED_FIXUPS)\n")
        out.write("  fixups_version = \(header.fixupsVersion)\n")
        out.write("  starts_offset  = \(header.startsOffset)\n")
        out.write("  imports_offset = \(header.importsOffset)\n")
        out.write("  symbols_offset = \(header.symbolsOffset)\n")
        out.write("  imports_count  = \(header.importsCount)\n")
        out.write("  imports_format = \(header.importsFormat.rawValue) (\(header.importsFormat.name))\n")
        out.write("  symbols_format = \(header.symbolsFormat)\n")

        let offsets = fixups.startsInImage.segmentInfoOffsets
        guard offsets.count <= image.segments.count else {
            throw MachOError.malformed(
                "chained starts list \(offsets.count) segments but the image has \(image.segments.count)",
                at: fixups.blob.absolute(Int(header.startsOffset)))
        }
        out.write("chained starts in image\n")
        out.write("  seg_count = \(offsets.count)\n")
        for (index, offset) in offsets.enumerated() {
            out.write("    seg_offset[\(index)] = \(offset) (\(image.segments[index].name))\n")
        }
        for starts in fixups.segments {
            out.write("chained starts in segment \(starts.segmentIndex) (\(image.segments[starts.segmentIndex].name))\n")
            out.write("  size = \(starts.size)\n")
            out.write("  page_size = 0x\(hex(starts.pageSize))\n")
            out.write("  pointer_format = \(starts.pointerFormat.rawValue) (\(starts.pointerFormat.name))\n")
            out.write("  segment_offset = 0x\(hex(starts.segmentOffset))\n")
            out.write("  max_valid_pointer = \(starts.maxValidPointer)\n")
            out.write("  page_count = \(starts.pageCount)\n")
            for (page, start) in starts.pageStarts.enumerated() {
                let note = start == ChainedStartsInSegment.startNone ? " (DYLD_CHAINED_PTR_START_NONE)" : ""
                out.write("    page_start[\(page)] = \(start)\(note)\n")
            }
        }

        let title = switch header.importsFormat {
        case .plain: "dyld chained import"
        case .addend: "dyld chained import addend"
        case .addend64: "dyld chained import addend64"
        }
        for (index, entry) in fixups.imports.enumerated() {
            let shown = try ObjdumpChainedImport(entry, format: header.importsFormat, in: fixups)
            out.write("\(title)[\(index)]\n")
            out.write("  lib_ordinal = \(shown.libraryOrdinal) (\(LibraryShortName.forOrdinal(shown.libraryOrdinal, in: image)))\n")
            out.write("  weak_import = \(shown.weakImport ? 1 : 0)\n")
            out.write("  name_offset = \(shown.nameOffset) (\(shown.name))\n")
            if header.importsFormat != .plain {
                out.write("  addend      = \(entry.addend)\n")
            }
        }
    }

    private static func hex<T: BinaryInteger>(_ value: T) -> String { String(value, radix: 16) }
}

/// A chained import as llvm-objdump 19 reads it, which differs from dyld's reading in two
/// ways that show in its output:
/// - only the encoded library ordinals 0xFD-0xFF (0xFFFD-0xFFFF for `addend64`) are taken
///   as negative special ordinals, where dyld sign-extends everything above 0xF0;
/// - for `DYLD_CHAINED_IMPORT_ADDEND64` it swaps the fields: the name offset it uses is the
///   `weak_import` bit, and `weak_import` is whether any bit above it is set.
struct ObjdumpChainedImport {
    let libraryOrdinal: Int
    let weakImport: Bool
    let nameOffset: UInt32
    let name: String

    init(_ entry: ChainedImport, format: ChainedImportFormat, in fixups: ChainedFixups) throws(MachOError) {
        switch format {
        case .plain, .addend:
            let encoded = Int(entry.rawValue & 0xFF)
            libraryOrdinal = encoded >= 0xFD ? encoded - 0x100 : encoded
            weakImport = entry.weakImport
            nameOffset = entry.nameOffset
            name = entry.name
        case .addend64:
            let encoded = Int(entry.rawValue & 0xFFFF)
            libraryOrdinal = encoded >= 0xFFFD ? encoded - 0x1_0000 : encoded
            weakImport = entry.rawValue >> 17 != 0
            nameOffset = UInt32((entry.rawValue >> 16) & 1)
            name = try fixups.symbolName(atOffset: nameOffset)
        }
    }
}
