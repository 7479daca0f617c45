import MachOReader
import LaunchPlan
import LaunchMemory

/// What a ``DynamicLoader`` keeps beside its images, the same for both launch paths: where
/// each image is mapped (the launch's memory, then each `dlopen`'s in load order), per image
/// the opens not yet closed and whether `RTLD_LOCAL` hides it from ``DynamicHandle/defaultSearch``,
/// and the first ``DynamicLoadEvent/limit`` `dlopen`s. Arrays, not hashed containers: a fresh
/// process pays the Swift runtime's first instantiation of each hashed type inside the `dlopen`.
package struct DynamicLoadBook {
    private let launch: LaunchMemory
    /// The memory of each `dlopen` that added images, in order.
    package private(set) var memories: [LaunchMemory] = []
    package private(set) var events: [DynamicLoadEvent] = []
    private var openCounts: [Int] = []
    private var hidden: [Bool] = []

    package init(launch: LaunchMemory) {
        self.launch = launch
        grow(by: launch.images.count)
    }

    /// The launch's images and those the `dlopen`s added.
    package var imageCount: Int { openCounts.count }

    /// Where image `index` is mapped.
    package func base(of index: Int) -> UInt64 {
        index < launch.images.count ? launch.images[index].base : memories.base(ofImage: index - launch.images.count)
    }

    /// The image mapped at `base` (a handle's, ``DynamicHandle/split(_:)``).
    package func image(at base: UInt64) -> Int? {
        (0..<imageCount).first { self.base(of: $0) == base }
    }

    /// The images ``DynamicLoader/symbol(_:handle:)`` searches for `name` from `handle`, in
    /// order; `dependencies(i)`: image i's edges that resolved (``DynamicHandle/dlsymSearchOrder(from:imageCount:dependencies:)``).
    package func searched(from handle: UInt64, for name: String,
                          dependencies: (Int) -> [(target: Int, kind: DylibLinkKind)]) throws(LoadError) -> [Int] {
        switch handle {
        case DynamicHandle.defaultSearch: return (0..<imageCount).filter { !hidden[$0] }
        case DynamicHandle.mainOnly: return [0]
        default:
            let (base, firstOnly) = DynamicHandle.split(handle)
            guard let index = image(at: base) else {
                throw .unusable(path: name, reason: "handle \(hex(handle)) is no loaded image")
            }
            return firstOnly ? [index] : DynamicHandle.dlsymSearchOrder(from: index, imageCount: imageCount, dependencies: dependencies)
        }
    }

    package mutating func record(_ event: DynamicLoadEvent) {
        if events.count < DynamicLoadEvent.limit { events.append(event) }
    }

    /// A `dlopen` mapped its images into `memory`, after those loaded before, and opened
    /// image `opened`. `RTLD_LOCAL` hides the opened image alone, not the dependents it
    /// brought (dyld4).
    package mutating func add(_ memory: LaunchMemory, opened: Int, mode: DynamicOpenMode) {
        memories.append(memory)
        grow(by: memory.images.count)
        openCounts[opened] = 1
        if mode.contains(.local) { hidden[opened] = true }
    }

    /// A `dlopen` of image `index`, already loaded: one more open of it; without `RTLD_LOCAL`
    /// it is searched by ``DynamicHandle/defaultSearch`` from now on (dyld4 unhides it).
    package mutating func reopen(_ index: Int, mode: DynamicOpenMode) {
        if !mode.contains(.local) { hidden[index] = false }
        openCounts[index] += 1
    }

    /// `dlclose(handle)`: balances one open of the image it names.
    package mutating func close(_ handle: UInt64) throws(LoadError) {
        guard let index = image(at: DynamicHandle.split(handle).base), openCounts[index] > 0 else {
            throw .unusable(path: hex(handle), reason: "is not a handle dlopen returned, or it was closed as often as opened")
        }
        openCounts[index] -= 1
    }

    private mutating func grow(by count: Int) {
        openCounts += [Int](repeating: 0, count: count)
        hidden += [Bool](repeating: false, count: count)
    }
}
