import LoaderCore
import MachOReader
import LaunchPlan
import LaunchMemory
import RuntimeServices
import SharedCache

/// `dlopen` the dyld2 way: the image and its new dependencies found by path search, parsed,
/// mapped into a reservation of their own, their fixups resolved by name against every
/// loaded image (interposing applies), protected, initialized bottom up; `dlsym` walks the
/// export tries of the images its handle searches, as dyld4's does (see ``DynamicLoader``).
/// A dylib the launch's shared cache holds is taken from it: not mapped (it lies in the
/// cache's range), not fixed up (the cache's build did), only the cache's patches written.
package final class SlowDynamicLoader: DynamicLoader {
    /// The launch's graph and plans, extended by every `dlopen` that added images.
    private var graph: DependencyGraph
    private var plans: [ImagePlan]
    private let launch: LaunchMemory
    /// Per node (in the graph's order) where it is mapped, its opens and whether it is hidden.
    package var book: DynamicLoadBook
    private var lookup: SymbolLookup?
    private let arch: String
    private let run: Bool
    private let signingPolicy: SigningPolicy
    /// The shared cache the launch took dylibs from, when it did.
    private let cache: SharedCacheDylibs?
    package var nextSlide: UInt64?

    package init(graph: DependencyGraph, plans: [ImagePlan], memory: LaunchMemory, options: LaunchOptions, cache: SharedCacheDylibs?) {
        launch = memory
        book = DynamicLoadBook(launch: memory)
        self.cache = memory.sharedRange == nil ? nil : cache
        arch = options.arch
        run = options.run
        signingPolicy = options.signingPolicy
        self.graph = graph
        if memory.sharedRange == nil { self.graph.forgetCache() }
        self.plans = plans
    }

    package func open(_ path: String, mode rawMode: Int32) throws(LoadError) -> UInt64 {
        let mode = DynamicOpenMode(rawValue: rawMode)
        var graph = self.graph, plans = self.plans
        let (node, added) = try graph.open(path, arch: arch)
        guard !added.isEmpty else {
            book.reopen(node, mode: mode)
            book.record(DynamicLoadEvent(requested: path, loaded: [], initialized: [], via: "dyld2"))
            return DynamicHandle.image(book.base(of: node), firstOnly: mode.contains(.first))
        }
        // The graph's copy found files to load: dropped, nothing is mapped.
        if mode.contains(.noLoad) { throw .unusable(path: path, reason: "is not loaded (RTLD_NOLOAD loads nothing)") }
        var signatures: [(path: String, signature: SignedImage?)] = []
        if signingPolicy != .default { signatures.append((graph.nodes[0].path, try CodeSigning.verify(graph.nodes[0].image, path: graph.nodes[0].path))) }
        for index in added {
            let image = graph.nodes[index]
            if image.cacheOffset == nil { signatures.append((image.path, try CodeSigning.verify(image.image, path: image.path))) }
            if ThreadLocals.hasDescriptors(image.image) {
                throw .unusable(path: image.path, reason: "has thread-local variables: dlopen sets them up only for images loaded at launch")
            }
            if (try? ObjCSections(image: image.image)) != nil {
                throw .unusable(path: image.path, reason: "has Objective-C metadata: dlopen runs the Objective-C step only for images loaded at launch")
            }
            plans.append(try ImagePlan(image: image.image, path: image.path, sliceOffset: image.file.sliceOffset))
        }
        if signingPolicy != .default { try signingPolicy.check(signatures) }
        // The cache's images lie in its range, which the launch's memory holds.
        // (nil when none is: a fresh process then makes no `[UInt64?]`, a first use of its type.)
        let cached = !added.contains(where: { graph.nodes[$0].cacheOffset != nil }) ? nil
            : added.map { index in graph.nodes[index].cacheOffset.flatMap { offset in launch.sharedRange.map { $0.base &+ offset } } }
        let memory = try LaunchMemory(plans: Array(plans[added]), firstSlide: nextSlide, readAhead: true,
                                      shared: cached.map { LaunchMemory.SharedImages(range: nil, bases: $0) })
        do throws(LoadError) {
            let bases = graph.nodes.indices.map { $0 < added.lowerBound ? book.base(of: $0) : memory.images[$0 - added.lowerBound].base }
            var resolver = try FixupResolver(graph: graph, plans: plans)
            // With the cache's patches of the images taken from it, as the launch writes them for its own.
            _ = try SlowPath.writeFixups(added, graph: graph, plans: plans, memory: memory, bases: bases, resolver: &resolver,
                                         cache: cached == nil ? nil : cache, record: false)
            try memory.applyProtections()
        } catch {
            memory.release()
            throw error
        }
        // Committed before any initializer runs: one may call dlopen itself.
        self.graph = graph
        self.plans = plans
        lookup = nil
        book.add(memory, opened: node, mode: mode)
        let order = InitializerOrder.forOpen(graph, root: node, firstNew: added.lowerBound).map { $0 - added.lowerBound }
        let initializers = try book.recordOpen(path, via: "dyld2", memory: memory, paths: plans[added].map(\.path), order: order,
                                               run: run, arch: arch) { (local) throws(LoadError) in
            try SlowPath.initializerOffsets(graph.nodes[added.lowerBound + local].image, index: local, memory: memory)
        }
        try CodeRunner.runInitializers(initializers, in: memory)
        return DynamicHandle.image(memory.images[0].base, firstOnly: mode.contains(.first))
    }

    package func symbol(_ name: String, handle: UInt64) throws(LoadError) -> UInt64 {
        if lookup == nil { lookup = try SymbolLookup(graph: graph) }
        let wanted = ByteView(Array(("_" + name).utf8))
        let searched = try book.searched(from: handle, for: name) { node in
            graph.nodes[node].dependencies.compactMap { edge in edge.target.map { ($0, edge.kind) } }
        }
        var target: BindTarget?
        for index in searched {
            target = try lookup!.find(wanted, in: index)
            if target != nil { break }
        }
        switch target {
        case let .image(index, offset)?: return book.base(of: index) &+ offset
        case let .absolute(value)?: return value
        default: throw .unusable(path: name, reason: "symbol not found")
        }
    }

    package func describe(_ address: UInt64) -> DynamicAddress? {
        for index in graph.nodes.indices {
            let base = book.base(of: index)
            if address >= base, address - base < plans[index].vmSize {
                return DynamicAddress.describe(address, image: graph.nodes[index].image, path: graph.nodes[index].path, base: base)
            }
        }
        return nil
    }
}
