import SharedCache
import ClosureBuild
import ClosureCache
import ClosureFormat
import Crypto
import Foundation
import LaunchMemory
import LaunchPlan
import LoaderCore
import LoaderSystem
import MachOReader

/// `dyld3 shared-cache build`: every dylib of a root, laid out and fixed up once for the shared
/// region's address, written in Apple's format (``DyldCache``). The images are the ones a
/// prelinked set of them would hold (``PrelinkBuilder``): each keeps its segments together,
/// every fixup between them is applied, and only the slide is left, in slide info v2.
package enum SharedCacheBuilder {
    /// What a build wrote.
    package struct Built: Sendable {
        package let path: String, arch: String
        package let images: [DyldCache.Image]
        package let mappings: [DyldCache.Mapping]
        package let size: Int, slideLocations: Int
        /// The patch table's locations (``DyldCachePatchTable``).
        package let patchLocations: Int
    }

    /// The delta bits of a location's word (bits 40–55, as Apple's v2 caches use them); the
    /// rest is the target's offset from the shared region's start (`value_add`).
    static let deltaMask: UInt64 = 0x00FF_FF00_0000_0000
    /// How far a launch may slide the cache (`maxSlide`).
    static let maxSlide: UInt64 = 0x4000_0000

    /// The cache `root` holds for `arch` at one of the places Apple keeps it (``DyldCache/paths(arch:)``); nil when none.
    package static func cachePath(root: String, arch: String) -> String? {
        DyldCache.paths(arch: arch).map { PathResolver.normalize(root + "/" + $0) }.first { FileStatus.of($0) != nil }
    }

    /// The Mach-O dylibs of `root` for `arch`, as real paths (each file once), sorted.
    package static func dylibs(root: String, arch: String) throws(LoadError) -> [String] {
        let rootURL = URL(fileURLWithPath: root).standardizedFileURL
        guard let walker = FileManager.default.enumerator(at: rootURL, includingPropertiesForKeys: [.isRegularFileKey, .isSymbolicLinkKey]) else {
            throw .unusable(path: root, reason: "cannot be read as a directory")
        }
        return walker.compactMap { $0 as? URL }.filter { url in
            guard let values = try? url.resourceValues(forKeys: [.isRegularFileKey, .isSymbolicLinkKey]),
                  values.isRegularFile == true, values.isSymbolicLink != true,
                  let image = try? ImageFile.load(path: url.path, arch: arch, root: nil).image else { return false }
            return image.header.fileType == .dylib
        }.map(\.path).sorted()
    }

    /// `dylibs` in the order a launch that needs them all loads them: breadth first from
    /// those no other dylib links (sorted), each one's dependencies in load-command order, as
    /// dyld loads an app's; the rest (cycles) after, sorted. The cache coalesces each weak
    /// definition to the first image of this order that defines it: the order an app's own
    /// launch usually agrees with, so its closure patches few of the cache's words.
    static func loadOrder(_ dylibs: [String], arch: String) throws(LoadError) -> [String] {
        var byInstallName: [String: String] = [:]
        var dependencies: [String: [String]] = [:]
        for path in dylibs {
            let image = try ImageFile.load(path: path, arch: arch, root: nil).image
            if let name = image.id?.installName, byInstallName[name] == nil { byInstallName[name] = path }
            dependencies[path] = image.dependencies.map(\.installName)
        }
        let linked = Set(dependencies.values.flatMap { $0.compactMap { byInstallName[$0] } })
        // Breadth first: the queue, once walked, is the order.
        var queue = dylibs.filter { !linked.contains($0) }
        var seen = Set(queue), next = 0
        while next < queue.count {
            for name in dependencies[queue[next]] ?? [] {
                guard let dependency = byInstallName[name], seen.insert(dependency).inserted else { continue }
                queue.append(dependency)
            }
            next += 1
        }
        return queue + dylibs.filter { !seen.contains($0) }
    }

    /// Builds the cache of `root`'s dylibs for `arch` and writes it atomically at its place in
    /// the root (``DyldCache/path(platform:arch:)``), or at `output`.
    package static func build(root: String, arch: String, output: String? = nil) throws -> Built {
        let found = try dylibs(root: root, arch: arch)
        guard !found.isEmpty else { throw LoadError.unusable(path: root, reason: "holds no \(arch) dylib: nothing to build a shared cache of") }
        let closure = try ClosureBuilder.build(roots: try loadOrder(found, arch: arch), arch: arch, root: root)
        let placeholder = root + "/(shared cache)"
        let (set, data) = try PrelinkBuilder.build(closure, closurePath: placeholder)
        try set.checkSlideRuns(path: placeholder)
        let machO = try closure.images.map { image throws(LoadError) in try ImageFile.load(path: image.path, arch: arch, root: nil).image }
        let platform = machO.first?.buildVersion?.platform ?? 1
        let osVersion = machO.first?.buildVersion?.minOS ?? 0
        let path = output ?? root + "/" + DyldCache.path(platform: platform, arch: arch)

        // The tables before the data, then the data from a page boundary: the header is mapped
        // at the shared region's start, the images after it.
        let imageCount = closure.images.count
        let names = closure.images.map(\.installName)
        let pathBytes = names.reduce(0) { $0 + $1.utf8.count + 1 }
        let uses = try patchableUses(closure, images: machO, path: placeholder)
        let runs = mergedRuns(SlidPrelinkedSetFile.protections(of: set), rangeSize: set.rangeSize)
        let mappingCount = runs.count + 1
        let mappingsAt = DyldCache.headerSize
        let slideMappingsAt = mappingsAt + mappingCount * DyldCache.Mapping.plainSize
        let imagesAt = slideMappingsAt + mappingCount * DyldCache.Mapping.size
        let textsAt = imagesAt + imageCount * DyldCache.Image.infoSize
        let pathsAt = textsAt + imageCount * DyldCache.Image.textInfoSize
        let patchAt = (pathsAt + pathBytes + 7) / 8 * 8
        let page = Int(set.pageSize)
        // The patch table's size does not depend on the addresses it holds.
        let patchSize = DyldCachePatchTable.size(patchExports(uses, headerArea: 0, imageOffsets: set.imageOffsets))
        let headerArea = (patchAt + patchSize + page - 1) / page * page
        let start = DyldCache.sharedRegionStart(arch: arch)
        let dataBase = start + UInt64(headerArea)
        guard UInt64(headerArea) + set.rangeSize <= UInt64(UInt32.max) else {
            throw ClosureError.mapping(path: path, image: "the shared cache", what: "its \(UInt64(headerArea) + set.rangeSize) bytes are more than a patch table's 32-bit cache offsets reach")
        }
        let patchExports = patchExports(uses, headerArea: UInt64(headerArea), imageOffsets: set.imageOffsets)
        let patchTable = DyldCachePatchTable.bytes(patchExports, at: start + UInt64(patchAt))
        var slid = try set.slid(ByteView(data), to: dataBase, path: placeholder)

        // Each image's load commands say where it is in the cache.
        for (index, image) in machO.enumerated() {
            try CacheImageHeader.rewrite(image, at: Int(set.imageOffsets[index]), in: &slid, address: dataBase + set.imageOffsets[index],
                                         fileOffset: UInt64(headerArea) + set.imageOffsets[index])
        }

        // The slide locations, per mapping, chained per page.
        var locations: [UInt64] = []
        do throws(FixupFault) {
            try FixupRunWalk(set.slideRuns).forEachRebase { location, _ in locations.append(location) }
        } catch {
            throw ClosureError.fixups(path: placeholder, image: "the shared cache", stream: .rebases, fault: error)
        }
        locations.sort()
        let slidePage: UInt64 = arch == "x86_64" ? 4096 : 16384
        var mappings = [DyldCache.Mapping(address: start, size: UInt64(headerArea), fileOffset: 0, slideInfoFileOffset: 0, slideInfoFileSize: 0,
                                          flags: 0, maxProt: UInt32(VMProtection.read.rawValue), initProt: UInt32(VMProtection.read.rawValue))]
        var slideInfos: [UInt8] = []
        let slideInfoAt = headerArea + slid.count
        var cursor = 0
        for run in runs {
            var pageStarts = [UInt16](repeating: DyldCache.SlideInfoV2.noRebase, count: Int((UInt64(run.range.count) + slidePage - 1) / slidePage))
            var mine: [UInt64] = []
            while cursor < locations.count, locations[cursor] < run.range.upperBound {
                if locations[cursor] >= run.range.lowerBound { mine.append(locations[cursor]) }
                cursor += 1
            }
            for (position, location) in mine.enumerated() {
                let into = location - run.range.lowerBound
                let pageIndex = Int(into / slidePage)
                if pageStarts[pageIndex] == DyldCache.SlideInfoV2.noRebase { pageStarts[pageIndex] = UInt16((into % slidePage) / 4) }
                let next = position + 1 < mine.count ? mine[position + 1] : nil
                let delta = next.flatMap { ($0 - run.range.lowerBound) / slidePage == UInt64(pageIndex) ? $0 - location : nil } ?? 0
                let value = PrelinkBuilder.load(at: Int(location), in: slid)
                guard value > start, value - start < (UInt64(1) << 40), delta % 4 == 0 else {
                    throw ClosureError.mapping(path: path, image: "the shared cache", what: "the pointer at \(hex(dataBase + location)) cannot be chained in slide info v2")
                }
                PrelinkBuilder.store((value - start) | (delta << UInt64(deltaMask.trailingZeroBitCount - 2)), at: Int(location), in: &slid)
            }
            var mapping = DyldCache.Mapping(address: dataBase + run.range.lowerBound, size: UInt64(run.range.count),
                                            fileOffset: UInt64(headerArea) + run.range.lowerBound, slideInfoFileOffset: 0, slideInfoFileSize: 0,
                                            flags: 0, maxProt: UInt32(run.protection.rawValue), initProt: UInt32(run.protection.rawValue))
            if !mine.isEmpty {
                let info = DyldCache.SlideInfoV2(pageSize: UInt32(slidePage), pageStarts: pageStarts, deltaMask: deltaMask, valueAdd: start).bytes
                mapping.slideInfoFileOffset = UInt64(slideInfoAt + slideInfos.count)
                mapping.slideInfoFileSize = UInt64(info.count)
                slideInfos += info
            }
            mappings.append(mapping)
        }

        let images = machO.enumerated().map { index, image in
            let status = FileStatus.of(closure.images[index].path)
            let text = image.segments.first { $0.name == "__TEXT" }
            return DyldCache.Image(address: dataBase + set.imageOffsets[index], modTime: UInt64(max(0, status?.mtimeSeconds ?? 0)),
                                   inode: status?.inode ?? 0, path: names[index], uuid: image.uuid ?? [UInt8](repeating: 0, count: 16),
                                   textSegmentSize: UInt32(clamping: text?.vmSize ?? 0))
        }
        let pathTable: [UInt8] = names.flatMap { Array($0.utf8) + [0] }
        var pathOffset = pathsAt
        var header = DyldCache.Header(
            magic: DyldCache.magic(arch: arch), mappingOffset: UInt32(mappingsAt), mappingCount: UInt32(mappings.count), uuid: [UInt8](repeating: 0, count: 16),
            cacheType: 0, imagesTextOffset: UInt64(textsAt), imagesTextCount: UInt64(imageCount), platform: platform, formatFlags: 0,
            sharedRegionStart: start, sharedRegionSize: UInt64(headerArea + slid.count), maxSlide: maxSlide,
            mappingWithSlideOffset: UInt32(slideMappingsAt), mappingWithSlideCount: UInt32(mappings.count), osVersion: osVersion,
            imagesOffset: UInt32(imagesAt), imagesCount: UInt32(imageCount))
        (header.patchInfoAddr, header.patchInfoSize) = (start + UInt64(patchAt), UInt64(patchTable.count))
        // Paths and text infos: each image's path offset is its own.
        var infoBytes: [UInt8] = [], textBytes: [UInt8] = []
        for image in images {
            infoBytes += Words.le([image.address, image.modTime, image.inode]) + Words.le32([UInt32(pathOffset), 0])
            textBytes += image.uuid + Words.le([image.address]) + Words.le32([image.textSegmentSize, UInt32(pathOffset)])
            pathOffset += image.path.utf8.count + 1
        }
        func file() -> [UInt8] {
            var out = header.bytes + mappings.flatMap(\.plainBytes) + mappings.flatMap(\.bytes) + infoBytes + textBytes + pathTable
            out += [UInt8](repeating: 0, count: patchAt - out.count) + patchTable
            out += [UInt8](repeating: 0, count: headerArea - out.count)
            return out + slid + slideInfos
        }
        // The cache's UUID: the SHA-256 of its bytes with the UUID zero, first 16 bytes.
        header.uuid = Array(SHA256.hash(data: file()).prefix(16))
        let bytes = file()
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try UnsafeFileIO.writeAtomically(bytes, to: path, mode: 0o444)
        return Built(path: path, arch: arch, images: images, mappings: mappings, size: bytes.count, slideLocations: locations.count,
                     patchLocations: patchExports.joined().reduce(0) { $0 + $1.locations.count })
    }

    /// One bind the cache's build applies between its images: the location (image, offset)
    /// and the export it points at (image, offset) with its addend.
    struct Use {
        let image: Int, vmOffset: UInt64, addend: Int64
    }

    /// Per image of `closure` (the cache's image table), its exports that the images' binds
    /// point at, each with its name (the export trie's first name for that offset, in name
    /// order) and its uses, in address order: what the patch table lists.
    static func patchableUses(_ closure: LaunchClosure, images: [MachOImage], path: String)
        throws -> [[(offset: UInt64, name: String, uses: [Use])]] {
        var byTarget = [[UInt64: [Use]]](repeating: [:], count: closure.images.count)
        for index in closure.images.indices {
            for fixup in try closure.fixups(ofImage: index, closurePath: path) {
                guard case let .bind(.image(target, offset), addend) = fixup.kind else { continue }
                guard DyldCachePatchTable.addends.contains(addend) else {
                    throw ClosureError.mapping(path: path, image: closure.images[index].path, what:
                        "the bind at +\(hex(fixup.vmOffset)) adds \(addend): a patch table location holds an addend of \(DyldCachePatchTable.addends)")
                }
                byTarget[target][offset, default: []].append(Use(image: index, vmOffset: fixup.vmOffset, addend: addend))
            }
        }
        return try byTarget.enumerated().map { index, targets in
            guard !targets.isEmpty else { return [] }
            var names: [UInt64: String] = [:]
            try LoadError.reading(closure.images[index].path) { () throws(MachOError) in
                try images[index].exportTrie()?.forEachSymbol { symbol in
                    guard !symbol.isReexport, let offset = symbol.imageOffset, targets[offset] != nil else { return }
                    if let known = names[offset], known <= symbol.name { return }
                    names[offset] = symbol.name
                }
            }
            return targets.keys.sorted().map { offset in (offset, names[offset] ?? "", targets[offset] ?? []) }
        }
    }

    /// The patch table's exports for `uses`, with the cache offsets of a cache whose images
    /// start `headerArea` bytes into it, each at its offset in the images' range.
    static func patchExports(_ uses: [[(offset: UInt64, name: String, uses: [Use])]], headerArea: UInt64, imageOffsets: [UInt64])
        -> [[DyldCachePatchTable.Export]] {
        uses.enumerated().map { index, exports in
            exports.map { export in
                let locations = export.uses.map { use in
                    DyldCachePatchTable.Location(cacheOffset: UInt32(truncatingIfNeeded: headerArea + imageOffsets[use.image] + use.vmOffset), addend: use.addend)
                }.sorted { $0.cacheOffset < $1.cacheOffset }
                return DyldCachePatchTable.Export(cacheOffsetOfImpl: UInt32(truncatingIfNeeded: headerArea + imageOffsets[index] + export.offset),
                                                  name: export.name, locations: locations)
            }
        }
    }

    /// The set's protection runs, the pages between them read-only (as a set maps them), with
    /// neighbours of one protection merged: the cache's mappings, covering the whole range.
    static func mergedRuns(_ runs: [SlidPrelinkedSetHeader.ProtectionRun], rangeSize: UInt64) -> [SlidPrelinkedSetHeader.ProtectionRun] {
        var merged: [SlidPrelinkedSetHeader.ProtectionRun] = []
        func append(_ run: SlidPrelinkedSetHeader.ProtectionRun) {
            if let last = merged.last, last.protection == run.protection, last.range.upperBound == run.range.lowerBound {
                merged[merged.count - 1] = .init(range: last.range.lowerBound..<run.range.upperBound, protection: run.protection)
            } else {
                merged.append(run)
            }
        }
        var cursor: UInt64 = 0
        for run in runs.sorted(by: { $0.range.lowerBound < $1.range.lowerBound }) {
            if run.range.lowerBound > cursor { append(.init(range: cursor..<run.range.lowerBound, protection: .read)) }
            append(run)
            cursor = max(cursor, run.range.upperBound)
        }
        if cursor < rangeSize { append(.init(range: cursor..<rangeSize, protection: .read)) }
        return merged
    }
}
