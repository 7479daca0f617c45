import ClosureCache
import ClosureFormat
import LaunchMemory
import LaunchPlan
import LoaderCore
import MachOReader

/// The shared cache a dyld2 launch takes dylibs from: opened once without following a link
/// and held to the closures' ownership rule (as a dyld3 launch opens the cache its closure
/// names), its tables read and bounded by the file, and the dylibs it holds by install name.
/// No dylib it holds is opened or checked one by one.
package struct SharedCacheDylibs: Sendable {
    /// The cache's path and UUID (its build).
    package let cache: ClosureSharedCache
    package let file: DyldCacheFile
    /// The dylibs it holds, for the graph.
    package let dylibs: CachedDylibs
    /// The cache's patch table: every use of each export its images bind to.
    package let patchTable: DyldCachePatchTable
    /// Where the copy slid for this boot is kept.
    let slidCopyDirectory: String

    /// Opens the cache `request` names for a launch of `arch`. Refused (each in one line naming
    /// the cache) when it is missing, untrusted, another architecture's, or unreadable, or
    /// when its patch table is missing or does not hold (``DyldCachePatchTable``).
    package static func open(_ request: SharedCacheRequest, arch: String) throws(ClosureError) -> SharedCacheDylibs {
        let path = request.path
        let header = try SharedCacheRegion.checkedHeader(path, refusing: path)
        guard header.arch == arch else { throw .incompatible(path: path, what: "it is for \(header.arch), the launch for \(arch)") }
        let cache = ClosureSharedCache(path: path, uuid: header.uuid)
        let file = try SharedCacheRegion.read(cache)
        guard file.header.uuid == header.uuid else {
            throw .stale(path: path, image: path, what: "(the shared cache) was replaced while it was opened")
        }
        try SharedCacheRegion.checkOneRange(file, path: path)
        let start = file.header.sharedRegionStart, size = file.header.sharedRegionSize
        var offsets: [String: Int] = [:]
        for image in file.images where offsets[image.path] == nil {
            guard image.address >= start, image.address - start < size else {
                throw .corrupt(path: path, offset: Int(file.header.imagesOffset), what: "image \(image.path) at \(hex(image.address)) lies outside the cache's region")
            }
            offsets[image.path] = Int(image.address - start)
        }
        let table: DyldCachePatchTable?
        do throws(MachOError) {
            table = try file.patchTable()
        } catch {
            throw .corrupt(path: path, offset: error.offset, what: error.description)
        }
        guard let table else { throw .incompatible(path: path, what: "it has no patch table: rebuild it with `dyld3 shared-cache build`") }
        return SharedCacheDylibs(cache: cache, file: file, dylibs: CachedDylibs(path: path, view: file.view, headerOffsets: offsets),
                                 patchTable: table, slidCopyDirectory: request.slidCopyDirectory)
    }

    /// The cache's copy slid for this boot mapped for a launch whose images lie at `slots`
    /// (nil: mapped from its file): the same copy, at the same base, a dyld3 launch maps.
    package func map(slots: [SharedCacheRegion.Slot?]) throws(ClosureError) -> LaunchMemory.SharedImages {
        try SharedCacheRegion.map(cache, rangeSize: file.header.sharedRegionSize, slots: slots, directory: slidCopyDirectory, refusing: cache.path)
    }

    /// Per slot (an image's offset in the region and its size), the pointers the cache's slide
    /// info names there: offset from the image's base, and the region offset pointed at.
    package func pointers(slots: [(offset: UInt64, size: UInt64)?]) throws(ClosureError) -> [[(vmOffset: UInt64, target: UInt64)]] {
        try SharedCacheRegion.pointers(in: file, path: cache.path, slots: slots)
    }

    /// The images of the cache that define symbols weakly (`MH_WEAK_DEFINES`), in its table's
    /// order (the order its build coalesced weak definitions in): each one's region offset and
    /// Mach-O, parsed where it lies. Only their headers are read for the others.
    package func weakDefiningImages() throws(ClosureError) -> [(offset: UInt64, image: MachOImage)] {
        let start = file.header.sharedRegionStart
        var images: [(offset: UInt64, image: MachOImage)] = []
        for entry in file.images {
            let offset = entry.address &- start
            do throws(MachOError) {
                guard try MachHeader(parsing: file.view.slice(Int(offset), MachHeader.size)).flags.contains(.weakDefines) else { continue }
                images.append((offset, try MachOImage(parsingInCache: file.view, headerOffset: Int(offset))))
            } catch {
                throw .corrupt(path: cache.path, offset: error.offset, what: "\(entry.path): \(error.description)")
            }
        }
        return images
    }
}
