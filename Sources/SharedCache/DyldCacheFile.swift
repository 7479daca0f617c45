import MachOReader

/// A dyld shared cache read from its bytes: header, mappings, images, each bounded by the file
/// (nothing a table claims is read past its end, no count is trusted beyond what the bytes hold).
package struct DyldCacheFile: Sendable {
    package let header: DyldCache.Header
    package let mappings: [DyldCache.Mapping]
    package let images: [DyldCache.Image]
    /// The other files of a cache split in several (``DyldCache/SubCache``), in the header's order.
    package let subCaches: [DyldCache.SubCache]
    package let view: ByteView

    package init(parsing view: ByteView) throws(MachOError) {
        self.view = view
        header = try DyldCache.Header(parsing: view)
        func table(_ offset: UInt64, _ count: UInt64, _ size: Int, _ what: String) throws(MachOError) -> ByteView {
            let (bytes, overflow) = count.multipliedReportingOverflow(by: UInt64(size))
            guard !overflow, offset <= UInt64(view.count), bytes <= UInt64(view.count) - offset else {
                throw MachOError.inCache("dyld_cache_header", at: view.absolute(0), what: "\(count) \(what) at \(hex(offset)) run past the file's \(view.count) bytes")
            }
            return try view.slice(Int(offset), Int(bytes))
        }
        let withSlideInfo = header.mappingWithSlideCount > 0
        let (mappingOffset, mappingCount, entrySize) = withSlideInfo
            ? (UInt64(header.mappingWithSlideOffset), Int(header.mappingWithSlideCount), DyldCache.Mapping.size)
            : (UInt64(header.mappingOffset), Int(header.mappingCount), DyldCache.Mapping.plainSize)
        let entries = try table(mappingOffset, UInt64(mappingCount), entrySize, withSlideInfo ? "mappings with slide info" : "mappings")
        mappings = try (0..<mappingCount).map { (index) throws(MachOError) in
            try DyldCache.Mapping(parsing: try entries.slice(index * entrySize, entrySize), withSlideInfo: withSlideInfo)
        }
        var end: UInt64 = 0
        for (index, mapping) in mappings.enumerated() {
            guard mapping.fileOffset <= UInt64(view.count), mapping.size <= UInt64(view.count) - mapping.fileOffset else {
                throw MachOError.inCache("dyld_cache_mapping_info", at: view.absolute(0), what: "mapping \(index) (\(hex(mapping.fileOffset))+\(hex(mapping.size))) runs past the file's \(view.count) bytes")
            }
            guard mapping.address >= end else {
                throw MachOError.inCache("dyld_cache_mapping_info", at: view.absolute(0), what: "mapping \(index) at \(hex(mapping.address)) overlaps or precedes the mapping before it")
            }
            end = mapping.address &+ mapping.size
        }
        let infos = try table(UInt64(header.imagesOffset), UInt64(header.imagesCount), DyldCache.Image.infoSize, "images")
        let texts = header.imagesTextCount == UInt64(header.imagesCount)
            ? try table(header.imagesTextOffset, header.imagesTextCount, DyldCache.Image.textInfoSize, "image text infos") : nil
        images = try (0..<Int(header.imagesCount)).map { (index) throws(MachOError) in
            let info = try infos.slice(index * DyldCache.Image.infoSize, DyldCache.Image.infoSize)
            let pathOffset = Int(try info.u32(24))
            guard pathOffset < view.count else {
                throw MachOError.inCache("dyld_cache_image_info", at: info.absolute(24), what: "image \(index)'s path offset \(hex(pathOffset)) is past the file")
            }
            let text = try texts?.slice(index * DyldCache.Image.textInfoSize, DyldCache.Image.textInfoSize)
            return DyldCache.Image(address: try info.u64(0), modTime: try info.u64(8), inode: try info.u64(16), path: try view.cString(pathOffset),
                                   uuid: try text?.bytes(0, 16) ?? [], textSegmentSize: try text?.u32(24) ?? 0)
        }
        let subCacheSize = DyldCache.SubCache.entrySize(headerSize: header.mappingOffset)
        let subCacheEntries = try table(UInt64(header.subCacheArrayOffset), UInt64(header.subCacheArrayCount), subCacheSize, "subcache entries")
        subCaches = try (0..<Int(header.subCacheArrayCount)).map { (index) throws(MachOError) in
            try DyldCache.SubCache(parsing: try subCacheEntries.slice(index * subCacheSize, subCacheSize), index: index)
        }
    }

    /// The slide info of mapping `index` (``DyldCache/SlideInfo``), nil when it has none.
    package func slideInfo(_ index: Int) throws(MachOError) -> DyldCache.SlideInfo? {
        let mapping = mappings[index]
        guard mapping.slideInfoFileSize > 0 else { return nil }
        guard mapping.slideInfoFileOffset <= UInt64(view.count), mapping.slideInfoFileSize <= UInt64(view.count) - mapping.slideInfoFileOffset else {
            throw MachOError.inCache("dyld_cache_mapping_and_slide_info", at: 0, what: "mapping \(index)'s slide info runs past the file")
        }
        return try DyldCache.SlideInfo(parsing: try view.slice(Int(mapping.slideInfoFileOffset), Int(mapping.slideInfoFileSize)), mappingSize: mapping.size)
    }

    /// Visits each location the slide info of mapping `index` names (none without slide info):
    /// its offset in the mapping and the unslid pointer it holds (top byte included).
    package func forEachSlidLocation(inMapping index: Int, _ body: (_ offset: UInt64, _ pointer: UInt64) -> Void) throws(MachOError) {
        let mapping = mappings[index]
        try slideInfo(index)?.forEachLocation(in: try view.slice(Int(mapping.fileOffset), Int(mapping.size)), body)
    }
}

extension DyldCacheFile {
    /// The cache's patch table, every part of it bounded and checked (``DyldCachePatchTable``);
    /// nil when it has none.
    package func patchTable() throws(MachOError) -> DyldCachePatchTable? { try DyldCachePatchTable(reading: self) }
}
