import MachOReader

/// `--chained-fixups`: the LC_DYLD_CHAINED_FIXUPS structures, printed as
/// `llvm-objdump-19 --macho --chained-fixups` prints them (nothing for an image without them).
enum ChainedFixupsTable {
    static func write<Output: TextOutputStream>(_ image: MachOImage, to out: inout Output) throws(MachOError) {
        guard let fixups = try image.parseChainedFixups() else { return }
        var text = TextBuffer()
        defer { text.flush(to: &out) }
        let header = fixups.header
        text.write("chained fixups header (LC_DYLD_CHAINED_FIXUPS)\n")
        text.field("  fixups_version = ", header.fixupsVersion)
        text.field("  starts_offset  = ", header.startsOffset)
        text.field("  imports_offset = ", header.importsOffset)
        text.field("  symbols_offset = ", header.symbolsOffset)
        text.field("  imports_count  = ", header.importsCount)
        text.write("  imports_format = \(header.importsFormat.rawValue) (\(header.importsFormat.name))\n")
        text.field("  symbols_format = ", header.symbolsFormat)

        let offsets = fixups.startsInImage.segmentInfoOffsets
        guard offsets.count <= image.segments.count else {
            throw MachOError.malformed(
                "chained starts list \(offsets.count) segments but the image has \(image.segments.count)",
                at: fixups.blob.absolute(Int(header.startsOffset)))
        }
        text.write("chained starts in image\n")
        text.field("  seg_count = ", UInt64(offsets.count))
        for (index, offset) in offsets.enumerated() { text.write("    seg_offset[\(index)] = \(offset) (\(image.segments[index].name))\n") }
        for starts in fixups.segments {
            text.write("chained starts in segment \(starts.segmentIndex) (\(image.segments[starts.segmentIndex].name))\n")
            text.field("  size = ", starts.size)
            text.write("  page_size = 0x")
            text.hex(UInt64(starts.pageSize), uppercase: false)
            text.write("\n  pointer_format = \(starts.pointerFormat.rawValue) (\(starts.pointerFormat.name))\n")
            text.write("  segment_offset = 0x")
            text.hex(UInt64(starts.segmentOffset), uppercase: false)
            text.write("\n")
            text.field("  max_valid_pointer = ", starts.maxValidPointer)
            text.field("  page_count = ", starts.pageCount)
            for (page, start) in starts.pageStarts.enumerated() {
                text.write("    page_start[")
                text.decimal(UInt64(page))
                text.write("] = ")
                text.decimal(UInt64(start))
                text.write(start == ChainedStartsInSegment.startNone ? " (DYLD_CHAINED_PTR_START_NONE)\n" : "\n")
                text.flushIfFull(to: &out)
            }
        }

        let title = switch header.importsFormat {
        case .plain: "dyld chained import["
        case .addend: "dyld chained import addend["
        case .addend64: "dyld chained import addend64["
        }
        let shortNames = LibraryShortNames(image)
        for (index, entry) in fixups.imports.enumerated() {
            let shown = try ObjdumpChainedImport(entry, format: header.importsFormat, in: fixups)
            text.write(title)
            text.decimal(UInt64(index))
            text.write("]\n  lib_ordinal = ")
            text.decimal(Int64(shown.libraryOrdinal))
            text.write(" (")
            text.write(shortNames[shown.libraryOrdinal])
            text.write(shown.weakImport ? ")\n  weak_import = 1\n  name_offset = " : ")\n  weak_import = 0\n  name_offset = ")
            text.decimal(UInt64(shown.nameOffset))
            text.write(" (")
            text.write(shown.name)
            text.write(")\n")
            if header.importsFormat != .plain {
                text.write("  addend      = ")
                text.decimal(entry.addend)
                text.write("\n")
            }
            text.flushIfFull(to: &out)
        }
    }
}

private extension TextBuffer {
    /// `label`, an unsigned decimal value and a newline.
    mutating func field<Value: BinaryInteger>(_ label: String, _ value: Value) {
        write(label)
        decimal(UInt64(value))
        write(ascii: UInt8(ascii: "\n"))
    }
}

/// A chained import as llvm-objdump 19 reads it, which differs from dyld's reading in two
/// ways that show in its output:
/// - only the encoded library ordinals 0xFD-0xFF (0xFFFD-0xFFFF for `addend64`) are taken
///   as negative special ordinals, where dyld sign-extends everything above 0xF0;
/// - for `DYLD_CHAINED_IMPORT_ADDEND64` it swaps the fields: the name offset it uses is the
///   `weak_import` bit, and `weak_import` is whether any bit above it is set.
struct ObjdumpChainedImport {
    let libraryOrdinal: Int, weakImport: Bool, nameOffset: UInt32, name: String

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
