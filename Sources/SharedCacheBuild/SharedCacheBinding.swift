import ClosureFormat
import LaunchPlan
import LoaderCore
import MachOReader
import SharedCache

/// Binds a closure into a shared cache at install time, as dyld3's closure builder does: every
/// image the cache holds (the same install name and UUID) becomes a ``CacheSlot`` (the cache's
/// image index and its offset in the shared region) with no fixups of its own, and the
/// closure names the cache's path and UUID. A launch then maps the cache once and opens,
/// checks and fixes up only the app's own images.
///
/// What the cache holds is checked against what this launch would write, word for word (a
/// rebase's or bind's target at its cache address, an absolute value as is): the words that
/// differ (a weak definition this launch coalesces to another image than the cache's build
/// did) stay in the closure as the image's patches, written into the cache's pages at launch,
/// as dyld3's closures patch the cache; so do a cached image's binds to an app image (one that
/// interposes, or whose weak definition wins).
package enum SharedCacheBinding {
    /// Why a closure was not bound into a cache.
    package struct Refusal: Error, CustomStringConvertible {
        package let cache: String, what: String
        package var description: String { "\(cache): not used: \(what)" }
    }

    /// `closure` bound into the cache at `cachePath`, and how many of its images the cache holds;
    /// its dlopen closures are bound into it too (``bind(dlopen:launch:cachePath:closurePath:)``).
    package static func bind(_ closure: LaunchClosure, cachePath: String, closurePath: String) throws -> (closure: LaunchClosure, cached: Int, patches: Int) {
        let cache = try OpenedCache(cachePath, arch: closure.arch)
        var bound = closure
        let (cached, patches) = try cache.bind(&bound, images: closure.rootCount..<closure.images.count, closurePath: closurePath)
        guard cached > 0 else { throw cache.refuse("it holds none of the app's dylibs") }
        bound.dlopens = try closure.dlopens.map { record in try cache.bind(dlopen: record, launch: closure, closurePath: closurePath) }
        return (bound, cached, patches)
    }

    /// The dlopen closure `record` (of a launch of `launch`) with the images it adds that the
    /// cache at `cachePath` holds bound into it: a `dlopen` then takes them from the cache's
    /// range, writing only their patches (a closure whose images the cache does not hold is
    /// returned as it is).
    package static func bind(dlopen record: ClosureDlopen, launch: LaunchClosure, cachePath: String, closurePath: String) throws -> ClosureDlopen {
        try OpenedCache(cachePath, arch: launch.arch).bind(dlopen: record, launch: launch, closurePath: closurePath)
    }

    /// The cache's bytes and tables, read once for a closure and its dlopen closures.
    struct OpenedCache {
        let path: String
        let bytes: ByteView
        let file: DyldCacheFile
        let byName: [String: Int]
        let slides: [DyldCache.SlideInfo?]

        func refuse(_ what: String) -> Refusal { Refusal(cache: path, what: what) }

        init(_ path: String, arch: String) throws {
            self.path = path
            bytes = try ImageFile.mapRegularFile(path)
            file = try DyldCacheFile(parsing: bytes)
            guard file.header.arch == arch else { throw Refusal(cache: path, what: "it is for \(file.header.arch), the closure for \(arch)") }
            // The patch table is what dyld2 patches from the same cache: one that does not hold
            // refuses the cache here too. The closure's patches are the words themselves, compared
            // below (exact, and they also cover binds into the app's images, which no table lists).
            let table: DyldCachePatchTable?
            do throws(MachOError) { table = try file.patchTable() } catch { throw Refusal(cache: path, what: "its patch table: \(error)") }
            guard table != nil else { throw Refusal(cache: path, what: "it has no patch table: rebuild it with `dyld3 shared-cache build`") }
            byName = Dictionary(file.images.enumerated().map { ($1.path, $0) }, uniquingKeysWith: { first, _ in first })
            // Each mapping's slide info says how its words hold a pointer (delta bits, value_add).
            let file = file
            slides = try file.mappings.indices.map { try file.slideInfo($0) }
        }

        /// `record` with its added images bound (``SharedCacheBinding/bind(dlopen:launch:cachePath:closurePath:)``).
        func bind(dlopen record: ClosureDlopen, launch: LaunchClosure, closurePath: String) throws -> ClosureDlopen {
            var nested = try record.closure(within: launch, path: closurePath)
            let (cached, _) = try bind(&nested, images: launch.images.count..<nested.images.count, closurePath: closurePath)
            guard cached > 0 else { return record }
            return ClosureDlopen(requested: record.requested, resolvedPath: record.resolvedPath, opened: record.opened, body: nested.encodedBody())
        }

        /// Binds the images of `closure` in `range` that the cache holds (the same install name
        /// and UUID): each a ``CacheSlot`` whose fixups are only the words the cache does not
        /// hold (its patches); every image's runs encoded again over a table of the targets
        /// the closure still binds. How many it bound, and their patches.
        func bind(_ closure: inout LaunchClosure, images range: Range<Int>, closurePath: String) throws -> (cached: Int, patches: Int) {
            let start = file.header.sharedRegionStart
            // Which images the cache holds: the same install name and the same UUID (every
            // image past the roots, for the targets of the ones bound here).
            var slots = [CacheSlot?](repeating: nil, count: closure.images.count)
            for (index, image) in closure.images.enumerated() where index >= closure.rootCount {
                guard let cached = byName[image.installName] else { continue }
                guard let uuid = image.identity.uuid, file.images[cached].uuid == uuid else {
                    throw refuse("\(image.installName) in the cache is not \(image.path) (another UUID): rebuild it with `dyld3 shared-cache build`")
                }
                slots[index] = CacheSlot(index: cached, offset: file.images[cached].address &- start)
            }
            let cachedCount = range.count { slots[$0] != nil }
            guard cachedCount > 0 else { return (0, 0) }
            // Every fixup of a cached image is in the cache, word for word, or becomes a patch.
            var fixups: [[ResolvedFixup]] = []
            var patchCount = 0
            let bases = slots.map { $0.map { start &+ $0.offset } ?? 0 }
            for (index, slot) in slots.enumerated() {
                guard range.contains(index), let slot else {
                    fixups.append(try closure.fixups(ofImage: index, closurePath: closurePath))
                    continue
                }
                let image = closure.images[index]
                var patches: [ResolvedFixup] = []
                for fixup in try closure.fixups(ofImage: index, closurePath: closurePath) {
                    let pointer: Bool
                    switch fixup.kind {
                    case let .bind(.image(target, _), _):
                        // Bound into an app image (interposed, or a weak definition coalesced to
                        // the app's): only this launch can write it.
                        guard slots[target] != nil else {
                            patches.append(fixup)
                            continue
                        }
                        pointer = true
                    case .rebase: pointer = true
                    case .bind(.absolute, _), .bind(.missingWeakImport, _): pointer = false
                    }
                    let address = start &+ slot.offset &+ fixup.vmOffset
                    // The mappings ascend (the reader checks it): the last one starting at or below.
                    let after = file.mappings.partitionPoint { $0.address <= address }
                    guard after > 0, address - file.mappings[after - 1].address < file.mappings[after - 1].size,
                          let raw = try? bytes.u64(Int(file.mappings[after - 1].fileOffset + (address - file.mappings[after - 1].address))) else {
                        throw refuse("\(image.installName)'s fixup at +\(hex(fixup.vmOffset)) is past the cache")
                    }
                    let held = pointer ? slides[after - 1]?.value(ofRaw: raw) ?? raw : raw
                    if held != fixup.value(imageBase: bases[index], imageBases: bases) { patches.append(fixup) }
                }
                closure.images[index].cacheSlot = slot
                fixups.append(patches)
                patchCount += patches.count
            }
            // The runs encoded again over a table of the targets the closure still binds: the
            // cached images' binds (most of the table) are the cache's, not the launch's.
            var targets: [BindTarget] = [], targetIndex: [BindTarget: Int] = [:]
            let objcWrites = try closure.objc.bindRuns.indices.map { try closure.objcWrites(ofImage: $0, closurePath: closurePath) }
            for (index, own) in fixups.enumerated() {
                let plan = closure.images[index].plan
                let rebases = FixupRuns.encodeRebases(own, plan: plan)
                let binds = FixupRuns.encodeBinds(own, plan: plan, targets: &targets, targetIndex: &targetIndex)
                closure.images[index].setRuns(rebases: rebases, binds: binds)
            }
            for (index, writes) in objcWrites.enumerated() where closure.objc.bindCounts[index] > 0 {
                let encoded = FixupRuns.encodeBinds(writes, plan: closure.images[index].plan, targets: &targets, targetIndex: &targetIndex)
                (closure.objc.bindRuns[index], closure.objc.bindCounts[index]) = (encoded.bytes[...], encoded.count)
            }
            closure.bindTargets = BindTargetTable(targets)
            closure.sharedCache = ClosureSharedCache(path: path, uuid: file.header.uuid)
            return (cachedCount, patchCount)
        }
    }
}
