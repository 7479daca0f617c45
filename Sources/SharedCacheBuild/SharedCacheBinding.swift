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

    /// `closure` bound into the cache at `cachePath`, and how many of its images the cache holds.
    package static func bind(_ closure: LaunchClosure, cachePath: String, closurePath: String) throws -> (closure: LaunchClosure, cached: Int, patches: Int) {
        let bytes = try ImageFile.mapRegularFile(cachePath)
        let cache = try DyldCacheFile(parsing: bytes)
        func refuse(_ what: String) -> Refusal { Refusal(cache: cachePath, what: what) }
        guard cache.header.arch == closure.arch else { throw refuse("it is for \(cache.header.arch), the closure for \(closure.arch)") }
        // The patch table is what dyld2 patches from the same cache: one that does not hold
        // refuses the cache here too. The closure's patches are the words themselves, compared
        // below (exact, and they also cover binds into the app's images, which no table lists).
        let table: DyldCachePatchTable?
        do throws(MachOError) { table = try cache.patchTable() } catch { throw refuse("its patch table: \(error)") }
        guard table != nil else { throw refuse("it has no patch table: rebuild it with `dyld3 shared-cache build`") }
        let start = cache.header.sharedRegionStart
        var byName: [String: Int] = [:]
        for (index, image) in cache.images.enumerated() where byName[image.path] == nil { byName[image.path] = index }
        // Which images the cache holds: the same install name and the same UUID.
        var slots = [CacheSlot?](repeating: nil, count: closure.images.count)
        for (index, image) in closure.images.enumerated() where index >= closure.rootCount {
            guard let cached = byName[image.installName] else { continue }
            guard let uuid = image.identity.uuid, cache.images[cached].uuid == uuid else {
                throw refuse("\(image.installName) in the cache is not \(image.path) (another UUID): rebuild it with `dyld3 shared-cache build`")
            }
            slots[index] = CacheSlot(index: cached, offset: cache.images[cached].address &- start)
        }
        let cachedCount = slots.count { $0 != nil }
        guard cachedCount > 0 else { throw refuse("it holds none of the app's dylibs") }
        // Every fixup of a cached image is in the cache, word for word, or becomes a patch.
        var bound = closure
        var fixups: [[ResolvedFixup]] = []
        var patchCount = 0
        let bases = slots.map { $0.map { start &+ $0.offset } ?? 0 }
        // Each mapping's slide info says how its words hold a pointer (delta bits, value_add).
        let slides = try cache.mappings.indices.map { try cache.slideInfo($0) }
        for (index, slot) in slots.enumerated() {
            guard let slot else {
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
                let after = cache.mappings.partitionPoint { $0.address <= address }
                guard after > 0, address - cache.mappings[after - 1].address < cache.mappings[after - 1].size,
                      let raw = try? bytes.u64(Int(cache.mappings[after - 1].fileOffset + (address - cache.mappings[after - 1].address))) else {
                    throw refuse("\(image.installName)'s fixup at +\(hex(fixup.vmOffset)) is past the cache")
                }
                let held = pointer ? slides[after - 1]?.value(ofRaw: raw) ?? raw : raw
                if held != fixup.value(imageBase: bases[index], imageBases: bases) { patches.append(fixup) }
            }
            bound.images[index].cacheSlot = slot
            fixups.append(patches)
            patchCount += patches.count
        }
        // The runs encoded again over a table of the targets the closure still binds: the
        // cached images' binds (most of the table) are the cache's, not the launch's.
        var targets: [BindTarget] = [], targetIndex: [BindTarget: Int] = [:]
        for (index, own) in fixups.enumerated() {
            let plan = closure.images[index].plan
            let rebases = FixupRuns.encodeRebases(own, plan: plan)
            let binds = FixupRuns.encodeBinds(own, plan: plan, targets: &targets, targetIndex: &targetIndex)
            bound.images[index].setRuns(rebases: rebases, binds: binds)
        }
        for index in closure.objc.bindRuns.indices where closure.objc.bindCounts[index] > 0 {
            let writes = FixupRuns.encodeBinds(try closure.objcWrites(ofImage: index, closurePath: closurePath), plan: closure.images[index].plan,
                                               targets: &targets, targetIndex: &targetIndex)
            (bound.objc.bindRuns[index], bound.objc.bindCounts[index]) = (writes.bytes[...], writes.count)
        }
        bound.bindTargets = BindTargetTable(targets)
        bound.sharedCache = ClosureSharedCache(path: cachePath, uuid: cache.header.uuid)
        return (bound, cachedCount, patchCount)
    }
}
