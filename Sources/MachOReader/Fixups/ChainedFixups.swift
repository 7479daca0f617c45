/// `dyld_chained_fixups_header`: the start of the LC_DYLD_CHAINED_FIXUPS blob, locating
/// the chain starts, the imports table and the symbol names.
package struct ChainedFixupsHeader: Equatable, Sendable {
    package static let size = 28

    /// Offsets of the header's fields, for error offsets.
    enum Field {
        static let fixupsVersion = 0, startsOffset = 4, importsOffset = 8, symbolsOffset = 12
        static let importsCount = 16, importsFormat = 20, symbolsFormat = 24
    }

    /// `symbols_format` of a plain symbols pool, and of a zlib-compressed one.
    package static let symbolsUncompressed: UInt32 = 0, symbolsZlib: UInt32 = 1

    /// `fixups_version`: always 0.
    package let fixupsVersion: UInt32
    /// Offsets in the blob of `dyld_chained_starts_in_image`, the imports table and the symbol names.
    package let startsOffset: UInt32, importsOffset: UInt32, symbolsOffset: UInt32, importsCount: UInt32
    package let importsFormat: ChainedImportFormat, symbolsFormat: UInt32

    package init(parsing view: ByteView) throws(MachOError) {
        try view.check(0, ChainedFixupsHeader.size)
        fixupsVersion = try view.u32(Field.fixupsVersion)
        guard fixupsVersion == 0 else {
            throw MachOError.malformed("unknown chained fixups version \(fixupsVersion)", at: view.absolute(Field.fixupsVersion))
        }
        startsOffset = try view.u32(Field.startsOffset)
        importsOffset = try view.u32(Field.importsOffset)
        symbolsOffset = try view.u32(Field.symbolsOffset)
        importsCount = try view.u32(Field.importsCount)
        let format = try view.u32(Field.importsFormat)
        guard let importsFormat = ChainedImportFormat(rawValue: format) else {
            throw MachOError.malformed("unknown chained imports format \(format)", at: view.absolute(Field.importsFormat))
        }
        self.importsFormat = importsFormat
        symbolsFormat = try view.u32(Field.symbolsFormat)
    }
}

/// The decoded LC_DYLD_CHAINED_FIXUPS blob: ``ChainedFixupChains`` (whose fields read as
/// its own, `fixups.header`) with the imports' names decoded. The chains themselves live
/// in the segments' data; walk them with ``forEachFixup(in:_:)`` or ``fixups(in:)``.
@dynamicMemberLookup
package struct ChainedFixups: Sendable {
    /// The blob without its imports' names decoded, which does the walking.
    package let chains: ChainedFixupChains, imports: [ChainedImport]

    package subscript<Value>(dynamicMember field: KeyPath<ChainedFixupChains, Value>) -> Value { chains[keyPath: field] }

    /// Parses the blob of an LC_DYLD_CHAINED_FIXUPS command.
    package init(parsing blob: ByteView) throws(MachOError) {
        chains = try ChainedFixupChains(parsing: blob)
        imports = try ChainedImport.parseTable(blob, header: chains.header)
    }

    /// The NUL-terminated string at `offset` of the symbols pool.
    package func symbolName(atOffset offset: UInt32) throws(MachOError) -> String {
        let blob = chains.blob, start = Int(chains.header.symbolsOffset)
        return try ChainedImportTable.nameBytes(at: offset, in: try blob.slice(start, blob.count - start), for: blob.base).string
    }

    /// Walks every chain as ``ChainedFixupChains/forEachPointer(in:_:)`` does, calling
    /// `body` with each fixup and, for a bind, the import it names.
    package func forEachFixup(
        in image: MachOImage, _ body: (ChainedFixup) throws(MachOError) -> Void
    ) throws(MachOError) {
        try chains.forEachPointer(in: image) { (site) throws(MachOError) in
            try body(ChainedFixup(site: site, boundImport: site.pointer.bind.map { imports[Int($0.importOrdinal)] }))
        }
    }

    /// Every fixup, in the order ``forEachFixup(in:_:)`` visits them.
    package func fixups(in image: MachOImage) throws(MachOError) -> [ChainedFixup] {
        var all: [ChainedFixup] = []
        try forEachFixup(in: image) { (fixup) throws(MachOError) in all.append(fixup) }
        return all
    }
}

/// The LC_DYLD_CHAINED_FIXUPS blob as a loader reads it on every launch: header, chain
/// starts per segment, and the imports table read in place (no names decoded). Walks the
/// chains with ``forEachPointer(in:_:)``.
package struct ChainedFixupChains: Sendable {
    package let header: ChainedFixupsHeader, startsInImage: ChainedStartsInImage
    /// The starts of every segment that has fixups (non-zero `seg_info_offset`), in order.
    package let segments: [ChainedStartsInSegment], importTable: ChainedImportTable
    /// The whole blob.
    package let blob: ByteView

    /// Parses the blob of an LC_DYLD_CHAINED_FIXUPS command.
    package init(parsing blob: ByteView) throws(MachOError) {
        self.blob = blob
        header = try ChainedFixupsHeader(parsing: blob)
        guard UInt64(header.startsOffset) < UInt64(blob.count) else {
            throw MachOError.malformed(
                "starts_offset \(header.startsOffset) is past the \(blob.count)-byte chained fixups blob",
                at: blob.absolute(ChainedFixupsHeader.Field.startsOffset))
        }
        let startsView = try blob.slice(Int(header.startsOffset), blob.count - Int(header.startsOffset))
        startsInImage = try ChainedStartsInImage(parsing: startsView)

        var segments: [ChainedStartsInSegment] = []
        for (index, infoOffset) in startsInImage.segmentInfoOffsets.enumerated() where infoOffset != 0 {
            guard UInt64(infoOffset) < UInt64(startsView.count) else {
                throw MachOError.malformed(
                    "seg_info_offset[\(index)] = \(infoOffset) is past the chained fixups blob",
                    at: startsView.absolute(4 + 4 * index))
            }
            let view = try startsView.slice(Int(infoOffset), startsView.count - Int(infoOffset))
            segments.append(try ChainedStartsInSegment(parsing: view, segmentIndex: index, infoOffset: infoOffset))
        }
        self.segments = segments

        switch header.symbolsFormat {
        case ChainedFixupsHeader.symbolsUncompressed: importTable = try ChainedImportTable(blob, header: header)
        case ChainedFixupsHeader.symbolsZlib:
            throw MachOError(offset: blob.absolute(ChainedFixupsHeader.Field.symbolsFormat), .unsupported("zlib-compressed chained fixups symbols"))
        default:
            throw MachOError.malformed(
                "unknown chained fixups symbols_format \(header.symbolsFormat)",
                at: blob.absolute(ChainedFixupsHeader.Field.symbolsFormat))
        }
    }

    /// Walks every chain of every page of every segment with fixups, in segment, page
    /// and chain order, calling `body` with each fixup.
    ///
    /// Fails, with the absolute offset of the bad bytes, on a segment index the image does
    /// not have, a chain that starts or continues outside its page or past the segment's
    /// file data, a start of a page's chains that is not past the end of the page's previous
    /// chain, and a bind whose import ordinal is not in the imports table. Every step of a
    /// chain moves forward inside one page (`next` is unsigned and non-zero), so a walk always
    /// ends, and visits each location at most once: an image has at most one fixup per
    /// `stride` bytes of its segments' file data, however its page starts repeat (dyld's
    /// `ChainedFixups::validLinkedit` requires a page's starts in ascending order; starts
    /// that fall inside an earlier chain of the page would still repeat its locations).
    package func forEachPointer(
        in image: MachOImage, _ body: (ChainedPointerSite) throws(MachOError) -> Void
    ) throws(MachOError) {
        var cursor = ChainedPointerCursor(self, in: image)
        while let site = try cursor.next() { try body(site) }
    }
}

/// One pointer of a chain, as ``ChainedFixupChains/forEachPointer(in:_:)`` finds it:
/// where it is, what is on disk and what it means (a bind's import is only its ordinal).
package struct ChainedPointerSite: Equatable, Sendable {
    /// Index of the segment holding the fixup, in load-command order.
    package let segmentIndex: Int
    /// Offset of the fixup from the start of its segment.
    package let offsetInSegment: UInt64
    /// The fixup's unslid vm address (segment vmaddr + offset).
    package let address: UInt64
    /// Absolute file offset of the on-disk pointer.
    package let fileOffset: Int
    /// The pointer as stored on disk (4 or 8 bytes, zero-extended).
    package let rawValue: UInt64, format: ChainedPointerFormat
    /// The decoded pointer.
    package let pointer: ChainedPointer

    @usableFromInline
    init(segmentIndex: Int, offsetInSegment: UInt64, address: UInt64, fileOffset: Int, rawValue: UInt64,
         format: ChainedPointerFormat, pointer: ChainedPointer) {
        (self.segmentIndex, self.offsetInSegment, self.address, self.fileOffset) = (segmentIndex, offsetInSegment, address, fileOffset)
        (self.rawValue, self.format, self.pointer) = (rawValue, format, pointer)
    }
}

/// One fixup found by walking the chains: the pointer as ``ChainedPointerCursor`` finds it
/// (where it is, what is on disk and what it means; its fields read as the fixup's own,
/// `fixup.address`), and for a bind the import its ordinal names.
@dynamicMemberLookup
package struct ChainedFixup: Equatable, Sendable {
    package let site: ChainedPointerSite
    /// For a bind, the import its ordinal names.
    package let boundImport: ChainedImport?

    package subscript<Value>(dynamicMember field: KeyPath<ChainedPointerSite, Value>) -> Value {
        site[keyPath: field]
    }
}

extension MachOImage {
    /// The decoded LC_DYLD_CHAINED_FIXUPS blob, or nil when the image has none (or, like a
    /// dylib stub, has the command with a zero data offset).
    package func parseChainedFixups() throws(MachOError) -> ChainedFixups? {
        guard let data = chainedFixups, data.dataOffset != 0 else { return nil }
        return try ChainedFixups(parsing: try linkeditBytes(data))
    }

    /// The LC_DYLD_CHAINED_FIXUPS blob ready to walk, its imports read in place (no names
    /// decoded), or nil as for ``parseChainedFixups()``.
    package func parseChainedFixupChains() throws(MachOError) -> ChainedFixupChains? {
        guard let data = chainedFixups, data.dataOffset != 0 else { return nil }
        return try ChainedFixupChains(parsing: try linkeditBytes(data))
    }

    /// Calls `body` with every chained fixup of the image (none without chained fixups).
    package func forEachChainedFixup(_ body: (ChainedFixup) throws(MachOError) -> Void) throws(MachOError) {
        try parseChainedFixups()?.forEachFixup(in: self, body)
    }
}
