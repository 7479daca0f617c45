import MachOReader

/// Apple's dyld shared cache file (`dyld_cache_format.h`): the header, the mapping tables, the
/// image tables and slide info (version 2 here, 3 and 5 in ``SlideInfo``), each read from a bounded byte view and written back
/// by the same definition. Offsets are the C structures' (the header as far as
/// `cacheSubType`, which `mappingOffset` marks as its size).
package enum DyldCache {
    /// `dyld_v1` and the architecture, right-aligned in 15 bytes and NUL-terminated.
    package static func magic(arch: String) -> [UInt8] {
        let text = "dyld_v1" + String(repeating: " ", count: max(1, 15 - 7 - arch.count)) + arch
        return Array(text.utf8.prefix(15)) + [0]
    }

    /// The header's size as written: through `cacheSubType`, padded to 8.
    package static let headerSize = 464
    /// The shared region's start where each architecture's cache is built to be mapped.
    package static func sharedRegionStart(arch: String) -> UInt64 { arch == "x86_64" ? 0x7FF8_0000_0000 : 0x1_8000_0000 }
    /// Where a root keeps its cache for `arch`, whichever its platform: the macOS path, then iOS's.
    package static func paths(arch: String) -> [String] {
        [path(platform: 1, arch: arch), path(platform: 2, arch: arch)]
    }

    /// Where the cache lives in a root, by platform (`dyld_cache_header.platform`: 1 macOS, else iOS-like).
    package static func path(platform: UInt32, arch: String) -> String {
        platform == 1 ? "System/Library/dyld/dyld_shared_cache_\(arch)" : "System/Library/Caches/com.apple.dyld/dyld_shared_cache_\(arch)"
    }

    /// `dyld_cache_header`, the fields this project writes and reads.
    package struct Header: Equatable, Sendable {
        package var magic: [UInt8]
        package var mappingOffset: UInt32
        package var mappingCount: UInt32
        package var uuid: [UInt8]
        package var cacheType: UInt64
        package var imagesTextOffset: UInt64
        package var imagesTextCount: UInt64
        /// The patch table's unslid address and size (``DyldCachePatchTable``), 0 when none.
        package var patchInfoAddr: UInt64 = 0
        package var patchInfoSize: UInt64 = 0
        package var platform: UInt32
        package var formatFlags: UInt32
        package var sharedRegionStart: UInt64
        package var sharedRegionSize: UInt64
        package var maxSlide: UInt64
        package var mappingWithSlideOffset: UInt32
        package var mappingWithSlideCount: UInt32
        package var osVersion: UInt32
        /// Where the `dyld_subcache_entry` table lies in the file and its count (0: no subcaches).
        package var subCacheArrayOffset: UInt32 = 0
        package var subCacheArrayCount: UInt32 = 0
        package var imagesOffset: UInt32
        package var imagesCount: UInt32

        /// The architecture the magic names (`x86_64`, `arm64`, ...).
        package var arch: String {
            String(decoding: magic.prefix { $0 != 0 }.dropFirst(7).filter { $0 != 0x20 }, as: UTF8.self)
        }

        package init(magic: [UInt8], mappingOffset: UInt32, mappingCount: UInt32, uuid: [UInt8], cacheType: UInt64, imagesTextOffset: UInt64,
                     imagesTextCount: UInt64, platform: UInt32, formatFlags: UInt32, sharedRegionStart: UInt64, sharedRegionSize: UInt64,
                     maxSlide: UInt64, mappingWithSlideOffset: UInt32, mappingWithSlideCount: UInt32, osVersion: UInt32,
                     imagesOffset: UInt32, imagesCount: UInt32) {
            (self.magic, self.mappingOffset, self.mappingCount, self.uuid, self.cacheType) = (magic, mappingOffset, mappingCount, uuid, cacheType)
            (self.imagesTextOffset, self.imagesTextCount, self.platform, self.formatFlags) = (imagesTextOffset, imagesTextCount, platform, formatFlags)
            (self.sharedRegionStart, self.sharedRegionSize, self.maxSlide) = (sharedRegionStart, sharedRegionSize, maxSlide)
            (self.mappingWithSlideOffset, self.mappingWithSlideCount, self.osVersion) = (mappingWithSlideOffset, mappingWithSlideCount, osVersion)
            (self.imagesOffset, self.imagesCount) = (imagesOffset, imagesCount)
        }

        /// Reads a header whose `mappingOffset` says it reaches `imagesCount` (caches since
        /// dyld-940; older ones keep their images at offset 24 and are read from there).
        package init(parsing view: ByteView) throws(MachOError) {
            func fail(_ offset: Int, _ what: String) -> MachOError { MachOError.inCache("dyld_cache_header", at: view.absolute(offset), what: what) }
            let prefix = try view.bytes(0, 16)
            guard prefix.starts(with: Array("dyld_v1".utf8)) else { throw fail(0, "not a dyld shared cache (no dyld_v1 magic)") }
            magic = prefix
            let size = Int(try view.u32(16))
            mappingOffset = UInt32(size)
            mappingCount = try view.u32(20)
            guard size >= 0x140 else { throw fail(16, "mapping offset \(hex(size)) leaves no room for a header with slide info (0x140 bytes)") }
            // Fields past the header's size (its mapping offset) are absent: 0.
            func field32(_ offset: Int) throws(MachOError) -> UInt32 { offset + 4 <= size ? try view.u32(offset) : 0 }
            func field64(_ offset: Int) throws(MachOError) -> UInt64 { offset + 8 <= size ? try view.u64(offset) : 0 }
            uuid = try view.bytes(88, 16)
            cacheType = try field64(104)
            imagesTextOffset = try field64(136)
            imagesTextCount = try field64(144)
            patchInfoAddr = try field64(152)
            patchInfoSize = try field64(160)
            platform = try field32(216)
            formatFlags = try field32(220)
            sharedRegionStart = try field64(224)
            sharedRegionSize = try field64(232)
            maxSlide = try field64(240)
            mappingWithSlideOffset = try field32(312)
            mappingWithSlideCount = try field32(316)
            osVersion = try field32(364)
            subCacheArrayOffset = try field32(392)
            subCacheArrayCount = try field32(396)
            if size >= 456 {
                imagesOffset = try view.u32(448)
                imagesCount = try view.u32(452)
            } else {
                imagesOffset = try view.u32(24)
                imagesCount = try view.u32(28)
            }
        }

        package var bytes: [UInt8] {
            var out = [UInt8](repeating: 0, count: DyldCache.headerSize)
            func put(_ value: UInt64, _ offset: Int, _ size: Int) {
                for byte in 0..<size { out[offset + byte] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(byte))) }
            }
            out.replaceSubrange(0..<16, with: magic)
            put(UInt64(mappingOffset), 16, 4); put(UInt64(mappingCount), 20, 4)
            out.replaceSubrange(88..<104, with: uuid)
            put(cacheType, 104, 8); put(imagesTextOffset, 136, 8); put(imagesTextCount, 144, 8)
            put(patchInfoAddr, 152, 8); put(patchInfoSize, 160, 8)
            put(UInt64(platform), 216, 4); put(UInt64(formatFlags), 220, 4)
            put(sharedRegionStart, 224, 8); put(sharedRegionSize, 232, 8); put(maxSlide, 240, 8)
            put(UInt64(mappingWithSlideOffset), 312, 4); put(UInt64(mappingWithSlideCount), 316, 4)
            put(UInt64(osVersion), 364, 4); put(UInt64(subCacheArrayOffset), 392, 4); put(UInt64(subCacheArrayCount), 396, 4)
            put(UInt64(imagesOffset), 448, 4); put(UInt64(imagesCount), 452, 4)
            return out
        }
    }

    /// A `dyld_subcache_entry`: another file of the cache, beside the main one, whose UUID it
    /// names and whose mappings lie `vmOffset` past the main cache's base. Headers that end at
    /// `cacheSubType` or before hold `dyld_subcache_entry_v1`s (24 bytes, no suffix: the file is
    /// the main one's path with `.1`, `.2`, ...); later ones name the suffix (56 bytes).
    package struct SubCache: Equatable, Sendable {
        package static func entrySize(headerSize: UInt32) -> Int { headerSize <= 456 ? 24 : 56 }
        package var uuid: [UInt8]
        package var vmOffset: UInt64
        package var fileSuffix: String

        package init(uuid: [UInt8], vmOffset: UInt64, fileSuffix: String) { (self.uuid, self.vmOffset, self.fileSuffix) = (uuid, vmOffset, fileSuffix) }

        /// Entry `index` of the table, `entry` its bytes.
        package init(parsing entry: ByteView, index: Int) throws(MachOError) {
            uuid = try entry.bytes(0, 16)
            vmOffset = try entry.u64(16)
            fileSuffix = entry.count >= 56 ? String(decoding: try entry.bytes(24, 32).prefix { $0 != 0 }, as: UTF8.self) : ".\(index + 1)"
        }

        package var bytes: [UInt8] { uuid + Words.le([vmOffset]) + (Array(fileSuffix.utf8.prefix(31)) + [UInt8](repeating: 0, count: 32)).prefix(32) }
    }

    /// `dyld_cache_mapping_and_slide_info` (its first three fields and the protections are
    /// `dyld_cache_mapping_info`, 32 bytes).
    package struct Mapping: Equatable, Sendable {
        package static let size = 56
        package static let plainSize = 32
        package var address: UInt64
        package var size: UInt64
        package var fileOffset: UInt64
        package var slideInfoFileOffset: UInt64
        package var slideInfoFileSize: UInt64
        package var flags: UInt64
        package var maxProt: UInt32
        package var initProt: UInt32

        package init(address: UInt64, size: UInt64, fileOffset: UInt64, slideInfoFileOffset: UInt64, slideInfoFileSize: UInt64, flags: UInt64,
                     maxProt: UInt32, initProt: UInt32) {
            (self.address, self.size, self.fileOffset, self.slideInfoFileOffset) = (address, size, fileOffset, slideInfoFileOffset)
            (self.slideInfoFileSize, self.flags, self.maxProt, self.initProt) = (slideInfoFileSize, flags, maxProt, initProt)
        }

        /// A `dyld_cache_mapping_and_slide_info` (`withSlideInfo`), else a `dyld_cache_mapping_info`.
        package init(parsing view: ByteView, withSlideInfo: Bool) throws(MachOError) {
            (address, size, fileOffset) = (try view.u64(0), try view.u64(8), try view.u64(16))
            (slideInfoFileOffset, slideInfoFileSize, flags) = withSlideInfo ? (try view.u64(24), try view.u64(32), try view.u64(40)) : (0, 0, 0)
            let protections = withSlideInfo ? 48 : 24
            (maxProt, initProt) = (try view.u32(protections), try view.u32(protections + 4))
        }

        package var plainBytes: [UInt8] { Words.le([address, size, fileOffset]) + Words.le32([maxProt, initProt]) }
        package var bytes: [UInt8] { Words.le([address, size, fileOffset, slideInfoFileOffset, slideInfoFileSize, flags]) + Words.le32([maxProt, initProt]) }
    }

    /// `dyld_cache_image_info` and `dyld_cache_image_text_info`, with the path they name.
    package struct Image: Equatable, Sendable {
        package static let infoSize = 32
        package static let textInfoSize = 32
        package var address: UInt64
        package var modTime: UInt64
        package var inode: UInt64
        package var path: String
        package var uuid: [UInt8]
        package var textSegmentSize: UInt32

        package init(address: UInt64, modTime: UInt64, inode: UInt64, path: String, uuid: [UInt8], textSegmentSize: UInt32) {
            (self.address, self.modTime, self.inode, self.path, self.uuid, self.textSegmentSize) = (address, modTime, inode, path, uuid, textSegmentSize)
        }
    }

    /// `dyld_cache_slide_info2`: per page of its mapping, the offset of the first location to
    /// slide, each location holding the next one's distance in the bits of `deltaMask`.
    package struct SlideInfoV2: Equatable, Sendable {
        package static let headerSize = 40
        package static let noRebase: UInt16 = 0x4000
        package static let extra: UInt16 = 0x8000
        package var pageSize: UInt32
        package var pageStarts: [UInt16]
        package var deltaMask: UInt64
        package var valueAdd: UInt64

        package init(pageSize: UInt32, pageStarts: [UInt16], deltaMask: UInt64, valueAdd: UInt64) {
            (self.pageSize, self.pageStarts, self.deltaMask, self.valueAdd) = (pageSize, pageStarts, deltaMask, valueAdd)
        }

        /// Reads slide info whose page starts lie inside `view` (its `slideInfoFileSize` bytes).
        package init(parsing view: ByteView, mappingSize: UInt64) throws(MachOError) {
            func fail(_ offset: Int, _ what: String) -> MachOError { MachOError.inCache("dyld_cache_slide_info2", at: view.absolute(offset), what: what) }
            guard try view.u32(0) == 2 else { throw fail(0, "version \(try view.u32(0)) is not 2 (only slide info v2 is read)") }
            pageSize = try view.u32(4)
            guard pageSize == 4096 || pageSize == 16384 else { throw fail(4, "page size \(pageSize) is not 4096 or 16384") }
            pageStarts = try DyldCache.pageStarts(view, at: Int(try view.u32(8)), countAt: 12, pageSize: pageSize, mappingSize: mappingSize,
                                                  fail: fail)
            guard try view.u32(20) == 0 else { throw fail(20, "page extras are not read") }
            deltaMask = try view.u64(24)
            valueAdd = try view.u64(32)
            guard deltaMask != 0, deltaMask.trailingZeroBitCount >= 2 else { throw fail(24, "delta mask \(hex(deltaMask)) holds no delta") }
        }

        package var bytes: [UInt8] {
            let pageExtrasOffset = UInt32(Self.headerSize + pageStarts.count * 2)
            let header = Words.le32([2, pageSize, UInt32(Self.headerSize), UInt32(pageStarts.count), pageExtrasOffset, 0])
            return DyldCache.slideInfoBytes(header + Words.le([deltaMask, valueAdd]), pageStarts: pageStarts)
        }

        /// The unslid address a location's word `raw` holds (its delta bits cleared, `value_add`
        /// added), or 0 for null.
        package func value(ofRaw raw: UInt64) -> UInt64 {
            let value = raw & ~deltaMask
            return value == 0 ? 0 : value &+ valueAdd
        }

        /// Visits every location the slide info names in the mapping's bytes: its offset in the
        /// mapping and the value it holds once slid by 0 (its unslid address, or 0 for null).
        /// Bounded by the bytes: a chain that leaves its page is an error.
        package func forEachLocation(in data: ByteView, _ body: (_ offset: UInt64, _ value: UInt64) -> Void) throws(MachOError) {
            let shift = UInt64(deltaMask.trailingZeroBitCount - 2)
            try DyldCache.forEachChainedLocation(in: data, structure: "dyld_cache_slide_info2", pageSize: pageSize, pageStarts: pageStarts,
                                                 noRebase: Self.noRebase, first: { (page, start) throws(MachOError) in
                guard start & Self.extra == 0 else {
                    throw MachOError.inCache("dyld_cache_slide_info2", at: data.absolute(page * Int(pageSize)), what: "page \(page) uses page extras")
                }
                return UInt64(start) * 4
            }, next: { ($0 & deltaMask) >> shift }) {
                body($0, value(ofRaw: $1))
            }
        }
    }
}

/// Little-endian words, for the tables above.
package enum Words {
    package static func le(_ values: [UInt64]) -> [UInt8] { values.flatMap { value in (0..<8).map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) } } }
    package static func le32(_ values: [UInt32]) -> [UInt8] { values.flatMap { value in (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * UInt32($0))) } } }
}

extension MachOError {
    /// A dyld shared cache's `structure` (`dyld_cache_header`, `dyld_cache_slide_info2`, ...)
    /// that cannot be right at `offset`.
    package static func inCache(_ structure: String, at offset: Int, what: String) -> MachOError {
        .malformed("\(structure): \(what)", at: offset)
    }
}
