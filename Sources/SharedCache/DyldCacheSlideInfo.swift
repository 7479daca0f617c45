import MachOReader

extension DyldCache {
    /// A mapping's slide info, in the version its first word names: v2 (what this project's
    /// caches carry, and x86_64 and arm64 caches), v3 (`dyld_cache_slide_info3`, arm64e) or
    /// v5 (`dyld_cache_slide_info5`, arm64e since dyld-1042). Each visits the same thing: the
    /// words a slide moves and the unslid pointer each holds.
    package enum SlideInfo: Equatable, Sendable {
        case v2(SlideInfoV2)
        case chained(SlideInfoV3V5)

        /// Reads the slide info in `view` (its `slideInfoFileSize` bytes) of a `mappingSize`-byte mapping.
        package init(parsing view: ByteView, mappingSize: UInt64) throws(MachOError) {
            switch try view.u32(0) {
            case 2: self = .v2(try SlideInfoV2(parsing: view, mappingSize: mappingSize))
            case 3, 5: self = .chained(try SlideInfoV3V5(parsing: view, mappingSize: mappingSize))
            case let version:
                throw MachOError.inCache("dyld_cache_slide_info", at: view.absolute(0), what: "version \(version) is not read (versions 2, 3 and 5 are)")
            }
        }

        package var version: UInt32 {
            switch self {
            case .v2: 2
            case let .chained(info): info.version
            }
        }

        package var pageCount: Int {
            switch self {
            case let .v2(info): info.pageStarts.count
            case let .chained(info): info.pageStarts.count
            }
        }

        /// The unslid pointer a location's word `raw` holds (0 for null).
        package func value(ofRaw raw: UInt64) -> UInt64 {
            switch self {
            case let .v2(info): info.value(ofRaw: raw)
            case let .chained(info): info.value(ofRaw: raw)
            }
        }

        /// Every location the slide info names in the mapping's bytes `data`: its offset in the
        /// mapping and the unslid pointer it holds (top byte included), a chain that leaves its
        /// page an error.
        package func forEachLocation(in data: ByteView, _ body: (_ offset: UInt64, _ value: UInt64) -> Void) throws(MachOError) {
            switch self {
            case let .v2(info): try info.forEachLocation(in: data, body)
            case let .chained(info): try info.forEachLocation(in: data, body)
            }
        }

        /// The address bits of a pointer ``forEachLocation(in:_:)`` gives: below its top byte,
        /// which v3 and v5 carry through a slide (a tag, as C++ RTTI uses).
        package static let addressBits: UInt64 = 0x00FF_FFFF_FFFF_FFFF
    }

    /// `dyld_cache_slide_info3` and `dyld_cache_slide_info5`: one header shape (version, page
    /// size, page count, a 64-bit value to add, then the page starts), each page's chain
    /// starting at its page start (a byte offset; `0xFFFF`: no chain) and going on in 8-byte
    /// strides held in the pointers themselves.
    ///
    /// v3 (`dyld_cache_slide_pointer3`): an authenticated pointer (bit 63) holds its target's
    /// offset from the cache's base in its low 32 bits (plus `auth_value_add`); a plain one its
    /// target in 51 bits (the top byte in bits 43–50); the next stride in bits 51–61.
    /// v5 (`dyld_chained_ptr_arm64e_shared_cache_rebase`): the target's offset from the cache's
    /// base in bits 0–33 (plus `value_add`), a plain pointer's top byte in bits 34–41, the next
    /// stride in bits 52–62, authenticated in bit 63.
    package struct SlideInfoV3V5: Equatable, Sendable {
        package static let headerSize = 24
        package static let noRebase: UInt16 = 0xFFFF
        package var version: UInt32
        package var pageSize: UInt32
        package var pageStarts: [UInt16]
        /// `auth_value_add` (v3) or `value_add` (v5): the cache's unslid base.
        package var valueAdd: UInt64

        package init(version: UInt32, pageSize: UInt32, pageStarts: [UInt16], valueAdd: UInt64) {
            (self.version, self.pageSize, self.pageStarts, self.valueAdd) = (version, pageSize, pageStarts, valueAdd)
        }

        package init(parsing view: ByteView, mappingSize: UInt64) throws(MachOError) {
            version = try view.u32(0)
            let structure = "dyld_cache_slide_info\(version)"
            func fail(_ offset: Int, _ what: String) -> MachOError { MachOError.inCache(structure, at: view.absolute(offset), what: what) }
            guard version == 3 || version == 5 else { throw fail(0, "version \(version) is not 3 or 5") }
            pageSize = try view.u32(4)
            guard pageSize == 4096 || pageSize == 16384 else { throw fail(4, "page size \(pageSize) is not 4096 or 16384") }
            valueAdd = try view.u64(16)
            pageStarts = try DyldCache.pageStarts(view, at: Self.headerSize, countAt: 8, pageSize: pageSize, mappingSize: mappingSize, fail: fail)
        }

        package var bytes: [UInt8] {
            DyldCache.slideInfoBytes(Words.le32([version, pageSize, UInt32(pageStarts.count), 0]) + Words.le([valueAdd]), pageStarts: pageStarts)
        }

        private static let authenticated: UInt64 = 1 << 63

        /// The next location's distance in 8-byte strides, held in `raw`.
        func stride(ofRaw raw: UInt64) -> UInt64 { version == 3 ? (raw >> 51) & 0x7FF : (raw >> 52) & 0x7FF }

        package func value(ofRaw raw: UInt64) -> UInt64 {
            if version == 3 {
                if raw & Self.authenticated != 0 { return (raw & 0xFFFF_FFFF) &+ valueAdd }
                let value51 = raw & 0x0007_FFFF_FFFF_FFFF
                return (value51 & 0x0007_F800_0000_0000) << 13 | (value51 & 0x0000_07FF_FFFF_FFFF)
            }
            let target = (raw & 0x3_FFFF_FFFF) &+ valueAdd
            return raw & Self.authenticated != 0 ? target : target | ((raw >> 34) & 0xFF) << 56
        }

        package func forEachLocation(in data: ByteView, _ body: (_ offset: UInt64, _ value: UInt64) -> Void) throws(MachOError) {
            try DyldCache.forEachChainedLocation(in: data, structure: "dyld_cache_slide_info\(version)", pageSize: pageSize, pageStarts: pageStarts,
                                                 noRebase: Self.noRebase, first: { _, start in UInt64(start) }, next: { stride(ofRaw: $0) * 8 }) {
                body($0, value(ofRaw: $1))
            }
        }
    }

    /// A slide info's page starts, `count` (at `countAt` in `view`) little-endian 16-bit words
    /// at `offset`: no more than the `mappingSize`-byte mapping has `pageSize`-byte pages.
    static func pageStarts(_ view: ByteView, at offset: Int, countAt: Int, pageSize: UInt32, mappingSize: UInt64,
                           fail: (Int, String) -> MachOError) throws(MachOError) -> [UInt16] {
        let count = Int(try view.u32(countAt))
        guard UInt64(count) <= (mappingSize + UInt64(pageSize) - 1) / UInt64(pageSize) else {
            throw fail(countAt, "\(count) page starts for a \(mappingSize)-byte mapping of \(pageSize)-byte pages")
        }
        let starts = try view.slice(offset, count * 2)
        return try (0..<count).map { (index) throws(MachOError) in try starts.u16(index * 2) }
    }

    /// A slide info's bytes: `header`, then the page starts, padded to 8 bytes.
    static func slideInfoBytes(_ header: [UInt8], pageStarts: [UInt16]) -> [UInt8] {
        let out = header + pageStarts.flatMap { [UInt8(truncatingIfNeeded: $0), UInt8($0 >> 8)] }
        return out + [UInt8](repeating: 0, count: (8 - out.count % 8) % 8)
    }

    /// Visits the chains every slide info version walks in `data` (the mapping's bytes): per
    /// page whose start is not `noRebase`, its locations (their offsets in the mapping and
    /// words), `first` giving the page's first from its start and `next` the bytes to the next
    /// one from a word (0: the chain ends); a chain that leaves its page is an error of `structure`.
    static func forEachChainedLocation(in data: ByteView, structure: String, pageSize: UInt32, pageStarts: [UInt16], noRebase: UInt16,
                                       first: (_ page: Int, _ start: UInt16) throws(MachOError) -> UInt64, next: (_ raw: UInt64) -> UInt64,
                                       _ body: (_ offset: UInt64, _ raw: UInt64) -> Void) throws(MachOError) {
        for (page, start) in pageStarts.enumerated() where start != noRebase {
            var offset = try first(page, start)
            while true {
                guard offset + 8 <= UInt64(pageSize) else {
                    throw MachOError.inCache(structure, at: data.absolute(page * Int(pageSize)),
                                             what: "page \(page)'s chain reaches +\(hex(offset)), past its page")
                }
                let at = UInt64(page) * UInt64(pageSize) + offset
                let raw = try data.u64(Int(at))
                body(at, raw)
                let distance = next(raw)
                guard distance != 0 else { break }
                offset += distance
            }
        }
    }
}
