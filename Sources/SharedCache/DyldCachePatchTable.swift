import MachOReader

/// The shared cache's patch table, version 1 (`dyld_cache_patch_info_v1` and its arrays, as
/// dyld's `dyld_cache_format.h` and `CachePatching.h` define them): per image of the image
/// table, the exports other images' fixups bound to, and per export every location in the
/// cache that uses it, with its addend. A launch that coalesces a weak definition elsewhere
/// than the cache's build did rebinds exactly these locations.
///
/// Version 1 is the one dyld reads from a header that ends before `swiftOptsSize` (its
/// `mappingOffset`): the header's `patchInfoAddr` (the table's unslid address) and
/// `patchInfoSize`; every address in the table is unslid, every offset the cache's (from
/// its first mapping's address).
package struct DyldCachePatchTable: Sendable {
    /// `dyld_cache_patch_info_v1`: four (address, count) pairs, the last the names' size.
    package static let infoSize = 64
    /// `dyld_cache_image_patches_v1`: the image's first export and how many.
    package static let imageSize = 8
    /// `dyld_cache_patchable_export_v1`: implementation's cache offset, first location, count, name offset.
    package static let exportSize = 16
    /// `dyld_cache_patchable_location_v1`: the use's cache offset, then (from bit 0) `high7`,
    /// `addend` (5 bits, 0...31), `authenticated`, `usesAddressDiversity`, `key`, `discriminator`.
    /// An addend outside 0...31 (a pointer before its symbol, say) is held, signed, in the
    /// 16 bits of `discriminator`, which an unauthenticated pointer does not use (Apple's
    /// readers ignore it there); the addend read is the two added.
    package static let locationSize = 8
    /// The addends a location holds: 0...31 as Apple's, the rest in 16 signed bits.
    package static let addends: ClosedRange<Int64> = Int64(Int16.min)...Int64(Int16.max)

    /// One use of an export: where the pointer is (cache offset) and what it adds.
    package struct Location: Equatable, Hashable, Sendable {
        package var cacheOffset: UInt32
        package var addend: Int64

        package init(cacheOffset: UInt32, addend: Int64) { (self.cacheOffset, self.addend) = (cacheOffset, addend) }
    }

    /// One export of an image and its uses, as the builder writes it.
    package struct Export: Equatable, Sendable {
        package var cacheOffsetOfImpl: UInt32
        package var name: String
        package var locations: [Location]

        package init(cacheOffsetOfImpl: UInt32, name: String, locations: [Location]) {
            (self.cacheOffsetOfImpl, self.name, self.locations) = (cacheOffsetOfImpl, name, locations)
        }
    }

    /// One export read from the table: its implementation's cache offset, its name's offset
    /// in the names, and the indices of its locations.
    package struct ExportEntry: Equatable, Sendable {
        package let cacheOffsetOfImpl: UInt32
        package let nameOffset: UInt32
        package let locations: Range<Int>
    }

    package let imageCount: Int
    package let exportCount: Int
    package let locationCount: Int
    package let namesSize: Int
    let images: ByteView
    let exports: ByteView
    let locationBytes: ByteView
    let names: ByteView

    // MARK: Writing

    /// The table's bytes for `images` (per image of the image table, its exports), laid out
    /// from the unslid `address`: the info, the image array, the exports, the locations, the names.
    package static func bytes(_ images: [[Export]], at address: UInt64) -> [UInt8] {
        let exportCount = images.reduce(0) { $0 + $1.count }
        let locationCount = images.reduce(0) { $0 + $1.reduce(0) { $0 + $1.locations.count } }
        let imagesAt = address + UInt64(infoSize)
        let exportsAt = imagesAt + UInt64(images.count * imageSize)
        let locationsAt = exportsAt + UInt64(exportCount * exportSize)
        let namesAt = locationsAt + UInt64(locationCount * locationSize)
        var imageBytes: [UInt8] = [], exportBytes: [UInt8] = [], locationBytes: [UInt8] = [], nameBytes: [UInt8] = []
        var nameOffsets: [String: UInt32] = [:]
        var exportIndex: UInt32 = 0, locationIndex: UInt32 = 0
        for exports in images {
            imageBytes += Words.le32([exportIndex, UInt32(exports.count)])
            for export in exports {
                let nameOffset: UInt32
                if let known = nameOffsets[export.name] {
                    nameOffset = known
                } else {
                    nameOffset = UInt32(nameBytes.count)
                    nameOffsets[export.name] = nameOffset
                    nameBytes += Array(export.name.utf8) + [0]
                }
                exportBytes += Words.le32([export.cacheOffsetOfImpl, locationIndex, UInt32(export.locations.count), nameOffset])
                for location in export.locations {
                    let bits = (0...31).contains(location.addend) ? UInt32(location.addend) << 7
                        : UInt32(UInt16(truncatingIfNeeded: location.addend)) << 16
                    locationBytes += Words.le32([location.cacheOffset, bits])
                }
                locationIndex += UInt32(export.locations.count)
            }
            exportIndex += UInt32(exports.count)
        }
        while nameBytes.count % 8 != 0 { nameBytes.append(0) }
        let info = Words.le([imagesAt, UInt64(images.count), exportsAt, UInt64(exportCount), locationsAt, UInt64(locationCount),
                             namesAt, UInt64(nameBytes.count)])
        return info + imageBytes + exportBytes + locationBytes + nameBytes
    }

    /// The size ``bytes(_:at:)`` writes for `images`, whatever the address.
    package static func size(_ images: [[Export]]) -> Int { bytes(images, at: 0).count }

    // MARK: Reading

    /// Reads the patch table of `file`, nil when its header names none. Every array is bounded
    /// by the file before anything is read from it; every image's exports lie in the export
    /// array, every export's implementation in its image and its locations in the location
    /// array; every location lies in a mapping of the cache's images (not the header's). That
    /// a location is in a writable or `__DATA_CONST` segment is checked where it is used.
    package init?(reading file: DyldCacheFile) throws(MachOError) {
        let header = file.header
        guard header.patchInfoAddr != 0 || header.patchInfoSize != 0 else { return nil }
        func fail(_ what: String) -> MachOError { MachOError.inCache("dyld_cache_patch_info_v1", at: 152, what: what) }
        // An unslid address's bytes: in a mapping, and within the file.
        func view(_ address: UInt64, _ count: UInt64, _ size: Int, _ what: String) throws(MachOError) -> ByteView {
            let (bytes, overflow) = count.multipliedReportingOverflow(by: UInt64(size))
            guard !overflow, let mapping = file.mappings.last(where: { $0.address <= address }), address - mapping.address <= mapping.size,
                  bytes <= mapping.size - (address - mapping.address) else {
                throw fail("\(count) \(what) at \(hex(address)) lie outside the cache's mappings")
            }
            let offset = mapping.fileOffset + (address - mapping.address)
            guard offset <= UInt64(file.view.count), bytes <= UInt64(file.view.count) - offset else {
                throw fail("\(count) \(what) at \(hex(address)) run past the file's \(file.view.count) bytes")
            }
            return try file.view.slice(Int(offset), Int(bytes))
        }
        let info = try view(header.patchInfoAddr, 1, Self.infoSize, "patch infos")
        guard UInt64(Self.infoSize) <= header.patchInfoSize else { throw fail("patchInfoSize \(header.patchInfoSize) is smaller than its info") }
        let imageCount = try info.u64(8), exportCount = try info.u64(24), locationCount = try info.u64(40), namesSize = try info.u64(56)
        guard imageCount <= UInt64(file.images.count) else { throw fail("\(imageCount) images' patches for a cache of \(file.images.count) images") }
        images = try view(try info.u64(0), imageCount, Self.imageSize, "images' patches")
        exports = try view(try info.u64(16), exportCount, Self.exportSize, "patchable exports")
        locationBytes = try view(try info.u64(32), locationCount, Self.locationSize, "patchable locations")
        names = try view(try info.u64(48), namesSize, 1, "bytes of export names")
        (self.imageCount, self.exportCount, self.locationCount, self.namesSize) = (Int(imageCount), Int(exportCount), Int(locationCount), Int(namesSize))

        // Each image's extent: from its address to the next image's, or the region's end.
        let start = header.sharedRegionStart
        let addresses = file.images.map(\.address).sorted()
        func extent(_ image: Int) -> Range<UInt64> {
            let address = file.images[image].address
            let after = addresses.partitionPoint { $0 <= address }
            let next = after < addresses.count ? addresses[after] : start &+ header.sharedRegionSize
            return address..<max(address, next)
        }
        for image in 0..<self.imageCount {
            let range = try exportRange(ofImage: image)
            guard range.upperBound <= self.exportCount else {
                throw fail("image \(image)'s exports \(range.lowerBound)..<\(range.upperBound) run past the \(exportCount) patchable exports")
            }
            let own = extent(image)
            for index in range {
                let export = try self.export(index)
                let address = start &+ UInt64(export.cacheOffsetOfImpl)
                guard own.contains(address) else {
                    throw fail("export \(index) at \(hex(address)) lies past its image \(image) (\(file.images[image].path))")
                }
                guard export.locations.upperBound <= self.locationCount else {
                    throw fail("export \(index)'s locations \(export.locations.lowerBound)..<\(export.locations.upperBound) run past the \(locationCount) patchable locations")
                }
                guard export.nameOffset < namesSize else { throw fail("export \(index)'s name at \(export.nameOffset) is past the \(namesSize) bytes of names") }
            }
        }
        // Every use is a pointer in the images: in a mapping past the header's (adjacent
        // mappings taken as one span: each image's lie end to end).
        var spans: [Range<UInt64>] = []
        for mapping in file.mappings.dropFirst().sorted(by: { $0.address < $1.address }) {
            let range = mapping.address..<(mapping.address &+ mapping.size)
            if let last = spans.last, range.lowerBound == last.upperBound {
                spans[spans.count - 1] = last.lowerBound..<range.upperBound
            } else {
                spans.append(range)
            }
        }
        for index in 0..<self.locationCount {
            let address = start &+ UInt64(try locationBytes.u32(index * Self.locationSize))
            let after = spans.partitionPoint { $0.lowerBound <= address }
            guard after > 0, spans[after - 1].upperBound >= address &+ 8 else {
                throw fail("location \(index) at \(hex(address)) is not in a mapping of the cache's images")
            }
        }
    }

    /// The export indices of image `image`.
    package func exportRange(ofImage image: Int) throws(MachOError) -> Range<Int> {
        guard image < imageCount else { return 0..<0 }
        let first = Int(try images.u32(image * Self.imageSize)), count = Int(try images.u32(image * Self.imageSize + 4))
        return first..<(first + count)
    }

    /// Export `index` (below ``exportCount``).
    package func export(_ index: Int) throws(MachOError) -> ExportEntry {
        let at = index * Self.exportSize
        let first = Int(try exports.u32(at + 4)), count = Int(try exports.u32(at + 8))
        return ExportEntry(cacheOffsetOfImpl: try exports.u32(at), nameOffset: try exports.u32(at + 12), locations: first..<(first + count))
    }

    /// Location `index` (below ``locationCount``).
    package func location(_ index: Int) throws(MachOError) -> Location {
        let bits = try locationBytes.u32(index * Self.locationSize + 4)
        let discriminator = bits & (1 << 12) == 0 ? Int64(Int16(truncatingIfNeeded: bits >> 16)) : 0
        return Location(cacheOffset: try locationBytes.u32(index * Self.locationSize), addend: Int64((bits >> 7) & 0x1f) + discriminator)
    }

    /// The name of an export.
    package func name(_ export: ExportEntry) throws(MachOError) -> String { try names.cString(Int(export.nameOffset)) }

    /// ``name(_:)``'s bytes, where they lie.
    package func nameBytes(_ export: ExportEntry) throws(MachOError) -> ByteView { try names.cStringBytes(Int(export.nameOffset)) }
}
