import LaunchPlan
import ClosureFormat
import LaunchMemory
import SharedCache

/// The mapping floor: what no loader can avoid. Reserve the region, map every segment of
/// every image, and write once to each page that holds a fixup; with protections, then give
/// each segment its final protection as the launch paths do (dyld's rule: `__DATA_CONST`
/// read-only once fixups are written). The page list is worked out from the closure before
/// timing starts.
struct MappingFloor {
    let plans: [ImagePlan]
    /// Per image: one fixup location (offset from the image's base) in each page with fixups.
    let pageLocations: [[UInt64]]
    /// A closure bound into the shared cache: its images there are mapped with the cache's
    /// copy slid for the boot (the cache's floor), only their patch pages written.
    let sharedCache: (cache: ClosureSharedCache, images: [ClosureImage], closurePath: String)?

    init(_ closure: LaunchClosure, closurePath: String = "") throws {
        plans = closure.images.map(\.plan)
        sharedCache = closure.sharedCache.map { ($0, closure.images, closurePath) }
        let page = LaunchMemory.pageSize
        pageLocations = try closure.images.indices.map { index in
            let firstInPage = Dictionary(try closure.fixups(ofImage: index).map { ($0.vmOffset / page, $0.vmOffset) }) { first, _ in first }
            return firstInPage.sorted { $0.key < $1.key }.map(\.value)
        }
    }

    var pageCount: Int { pageLocations.reduce(0) { $0 + $1.count } }

    /// Maps everything and dirties each fixup page (one 8-byte store at one of its fixups),
    /// then, with `protections`, applies the final protections; returns the nanoseconds that
    /// took and the memory, still mapped. With `readAhead` (cold samples), each image is read
    /// ahead as the launch paths do.
    func launch(readAhead: Bool, protections: Bool) throws(LoadError) -> (nanoseconds: Int64, memory: LaunchMemory) {
        let (memory, nanoseconds) = try timed { () throws(LoadError) -> LaunchMemory in
            let shared: LaunchMemory.SharedImages?
            do throws(ClosureError) {
                shared = try sharedCache.map { (cache) throws(ClosureError) in try SharedCacheRegion.map(cache.cache, images: cache.images, closurePath: cache.closurePath) }
            } catch {
                throw .failed(path: sharedCache?.closurePath ?? "", cause: error)
            }
            let memory = try LaunchMemory(plans: plans, firstSlide: nil, readAhead: readAhead, shared: shared)
            if shared != nil { try memory.openForPatches(zip(memory.images, pageLocations).map { $0.inSharedCache ? $1 : [] }) }
            for (index, locations) in pageLocations.enumerated() {
                let base = memory.images[index].base
                for location in locations {
                    // A new value, like a rebase: storing back the word just loaded is a no-op the
                    // optimizer removes, and the page would stay clean.
                    UnsafeFixupStore.store(base &+ location, at: base &+ location)
                }
            }
            if protections { try memory.applyProtections() }
            return memory
        }
        return (nanoseconds, memory)
    }

    /// One sample of ``launch(readAhead:protections:)``: its nanoseconds, the memory unmapped again.
    func sample(readAhead: Bool, protections: Bool) throws(LoadError) -> Int64 {
        let mapped = try launch(readAhead: readAhead, protections: protections)
        mapped.memory.release()
        return mapped.nanoseconds
    }
}

extension Duration {
    var nanoseconds: Int64 { components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000 }
}

/// A copy of `value` with `change` made to it (a launch's options with one setting changed).
func changed<T>(_ value: T, _ change: (inout T) -> Void) -> T {
    var copy = value
    change(&copy)
    return copy
}

/// What `body` returns, and the nanoseconds it took.
func timed<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> (value: T, nanoseconds: Int64) {
    let start = ContinuousClock.now
    let value = try body()
    return (value, (ContinuousClock.now - start).nanoseconds)
}
