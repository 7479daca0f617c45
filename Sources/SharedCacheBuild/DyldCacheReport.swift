import ClosureCache
import LoaderCore
import SharedCache
import MachOInspect
import MachOReader

/// What `dyld3 inspect` prints for a dyld shared cache: the header, the mappings with their
/// slide info, and the images (address, UUID, path), as `dyld_shared_cache_util -list` lists them.
package enum DyldCacheReport {
    static func protection(_ bits: UInt32) -> String { VMProtection(rawValue: Int32(truncatingIfNeeded: bits)).description }

    package static func text(_ cache: DyldCacheFile, path: String) throws(MachOError) -> String {
        let header = cache.header
        var out = "\(path): dyld shared cache (\(header.arch))\n"
        out += "  uuid:            \(header.uuid.uuidString)\n"
        out += "  platform:        \(header.platform), os version \(header.osVersion >> 16).\((header.osVersion >> 8) & 0xff)\n"
        out += "  shared region:   \(hex(header.sharedRegionStart)) + \(hex(header.sharedRegionSize)), max slide \(hex(header.maxSlide))\n"
        out += "  mappings:        \(cache.mappings.count)\n"
        for (index, mapping) in cache.mappings.enumerated() {
            var line = "    \(index): \(hex(mapping.address))-\(hex(mapping.address &+ mapping.size)) \(protection(mapping.initProt))/\(protection(mapping.maxProt)) file \(hex(mapping.fileOffset))"
            if case let (slide?, count) = try slideLocations(cache, index) {
                line += ", slide info v\(slide.version): \(slide.pageCount) pages, \(count) locations"
            }
            out += line + "\n"
        }
        let patchTable = try cache.patchTable().map { "v1, \($0.exportCount) exports, \($0.locationCount) locations (\($0.imageCount) images)" }
        out += "  patch table:     \(patchTable ?? "none")\n"
        if !cache.subCaches.isEmpty {
            out += "  subcaches:       \(cache.subCaches.count)\n"
            for sub in cache.subCaches {
                out += "    \(sub.fileSuffix): \(sub.uuid.uuidString) at +\(hex(sub.vmOffset)), \(subCacheStatus(sub, of: path).text)\n"
            }
        }
        out += "  images:          \(cache.images.count)\n"
        for image in cache.images { out += "    \(hex(image.address)) \(image.uuid.uuidString) \(image.path)\n" }
        return out
    }

    package static func json(_ cache: DyldCacheFile, path: String) throws(MachOError) -> JSONValue {
        let header = cache.header
        let table = try cache.patchTable()
        let mappings = try cache.mappings.enumerated().map { (index, mapping) throws(MachOError) -> JSONValue in
            let (slide, locations) = try slideLocations(cache, index)
            return .object([
                ("address", .uint(mapping.address)), ("size", .uint(mapping.size)), ("file_offset", .uint(mapping.fileOffset)),
                ("init_prot", .string(protection(mapping.initProt))), ("max_prot", .string(protection(mapping.maxProt))),
                ("slide_info_version", slide.map { .int(Int64($0.version)) } ?? .null), ("slide_locations", .int(Int64(locations))),
            ])
        }
        return .object([
            ("file", .string(path)), ("kind", .string("dyld_shared_cache")), ("arch", .string(header.arch)), ("uuid", .string(header.uuid.uuidString)),
            ("platform", .int(Int64(header.platform))), ("shared_region_start", .uint(header.sharedRegionStart)),
            ("shared_region_size", .uint(header.sharedRegionSize)), ("max_slide", .uint(header.maxSlide)),
            ("mappings", .array(mappings)),
            ("patch_table", table.map { table in
                .object([("version", .int(1)), ("images", .int(Int64(table.imageCount))), ("exports", .int(Int64(table.exportCount))),
                         ("locations", .int(Int64(table.locationCount)))])
            } ?? .null),
            ("subcaches", .array(cache.subCaches.map { sub in
                let status = subCacheStatus(sub, of: path)
                return .object([("suffix", .string(sub.fileSuffix)), ("uuid", .string(sub.uuid.uuidString)), ("vm_offset", .uint(sub.vmOffset)),
                                ("file", .string(path + sub.fileSuffix)), ("file_uuid", status.uuid.map { .string($0.uuidString) } ?? .null)])
            })),
            ("images", .array(cache.images.map { image in
                .object([("address", .uint(image.address)), ("uuid", .string(image.uuid.uuidString)), ("path", .string(image.path)),
                         ("inode", .uint(image.inode)), ("mod_time", .uint(image.modTime))])
            })),
        ])
    }

    /// Mapping `index`'s slide info and how many locations it slides (none without one).
    static func slideLocations(_ cache: DyldCacheFile, _ index: Int) throws(MachOError) -> (DyldCache.SlideInfo?, Int) {
        guard let slide = try cache.slideInfo(index) else { return (nil, 0) }
        var count = 0
        try slide.forEachLocation(in: try cache.view.slice(Int(cache.mappings[index].fileOffset), Int(cache.mappings[index].size))) { _, _ in count += 1 }
        return (slide, count)
    }

    /// What lies beside the main cache at `path` for subcache `sub`: the UUID its header names
    /// (nil when there is no such cache file), and that said in words.
    static func subCacheStatus(_ sub: DyldCache.SubCache, of path: String) -> (uuid: [UInt8]?, text: String) {
        guard let bytes = try? ImageFile.mapRegularFile(path + sub.fileSuffix) else { return (nil, "missing (\(path + sub.fileSuffix))") }
        guard let header = try? DyldCache.Header(parsing: bytes) else { return (nil, "\(path + sub.fileSuffix) is not a dyld shared cache") }
        return (header.uuid, header.uuid == sub.uuid ? "present" : "another UUID in \(path + sub.fileSuffix) (\(header.uuid.uuidString))")
    }

    /// The image of `cache` whose install name is `name`, parsed where it lies (its load
    /// commands' file offsets are the cache file's), with its index; nil when the cache has none.
    package static func image(named name: String, in cache: DyldCacheFile) throws(MachOError) -> (index: Int, image: MachOImage)? {
        guard let index = cache.images.firstIndex(where: { $0.path == name }) else { return nil }
        let address = cache.images[index].address
        guard let mapping = cache.mappings.first(where: { address >= $0.address && address - $0.address < $0.size }) else {
            throw MachOError.inCache("dyld_cache_image_info", at: Int(cache.header.imagesOffset) + index * DyldCache.Image.infoSize, what: "image \(index) (\(name)) at \(hex(address)) lies in no mapping")
        }
        let offset = mapping.fileOffset + (address - mapping.address)
        guard offset < UInt64(cache.view.count) else {
            throw MachOError.inCache("dyld_cache_mapping_info", at: Int(mapping.fileOffset), what: "image \(name) lies past the file")
        }
        return (index, try MachOImage(parsing: cache.view, headerOffset: Int(offset)))
    }

    /// One image of the cache: where it lies, its identity, segments and dependencies, then the
    /// tables asked for, in llvm-objdump's formats (``ObjdumpReport/writeTable(_:_:to:)``).
    package static func imageText(_ cache: DyldCacheFile, path: String, name: String, tables: Set<InspectTable>) throws(MachOError) -> String {
        guard let (index, image) = try self.image(named: name, in: cache) else {
            throw MachOError.inCache("dyld_cache_image_info", at: Int(cache.header.imagesOffset), what: "no image \(name) in the cache (`dyld3 inspect \(path)` lists them)")
        }
        var out = "\(path) [\(name)]: image \(index) of the cache, header at file offset \(hex(UInt64(image.headerOffset)))\n"
        guard tables.isEmpty else {
            for table in InspectTable.objdumpOrder where tables.contains(table) { try ObjdumpReport.writeTable(table, image, to: &out) }
            return out
        }
        out += "  type          \(image.header.fileType)\n"
        out += "  flags         \(hex(UInt64(image.header.flags.rawValue)))\n"
        out += "  load commands \(image.loadCommands.count) (\(image.header.commandsSize) bytes)\n"
        if let uuid = image.uuid { out += "  uuid          \(uuid.uuidString)\n" }
        out += "  segments\n"
        for segment in image.segments {
            out += "    \(segment.name.padding(toLength: 16, withPad: " ", startingAt: 0)) vm \(hex(segment.vmAddress))+\(hex(segment.vmSize))"
                + " file \(hex(segment.fileOffset))+\(hex(segment.fileSize)) \(segment.initialProtection)\n"
        }
        out += "  dependencies\n"
        for dependency in image.dependencies { out += "    \(dependency.kind)  \(dependency.installName)\n" }
        return out
    }
}

