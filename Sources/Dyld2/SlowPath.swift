import LoaderCore
import MachOReader
import LaunchPlan
import LaunchMemory
import RuntimeServices
import SharedCache

/// The dyld2 slow path: on every launch, parse every image, resolve every path, interpret
/// every opcode stream or fixup chain, look every bound symbol up by name, then run the
/// initializers and main. Nothing is cached between launches.
///
/// With a shared cache (``LaunchOptions/sharedCache``), every dylib whose install name the
/// cache holds is taken from it, as dyld2 took a dylib from the shared cache: no file opened,
/// its Mach-O read where it lies in the cache, its fixups not redone (the cache's copy slid
/// for this boot carries them), only the words a weak definition coalesced elsewhere patched
/// (``SharedCachePatches``).
package enum SlowPath {
    package static func launch(_ options: LaunchOptions) throws(LoadError) -> Launch {
        guard let request = options.sharedCache else { return try launch(options, cache: nil) }
        do throws(LoadError) {
            let cache = try SharedCachePatches.failed(request.path) { () throws(ClosureError) in
                try SharedCacheDylibs.open(request, arch: options.arch)
            }
            return try launch(options, cache: cache)
        } catch {
            // A cache that cannot be used: named in one line; `auto` loads from the files.
            guard !request.required, case let .failed(path, cause) = error, path == request.path else { throw error }
            let launch = try launch(options, cache: nil)
            var report = launch.report
            report.sharedCacheRefusal = "\(cause)"
            return Launch(memory: launch.memory, report: report, fixups: launch.fixups)
        }
    }

    static func launch(_ options: LaunchOptions, cache: SharedCacheDylibs?) throws(LoadError) -> Launch {
        var report = LaunchReport(mode: "dyld2")
        var clock = PhaseClock()

        let graph = try DependencyGraph(roots: options.roots, inserted: options.inserted, arch: options.arch, root: options.root, cache: cache?.dylibs)
        report.timings[.pathResolution] = clock.lap() - graph.parseNanoseconds
        // Every signed image verifies whole before anything is mapped, then the policy decides
        // by what verified (unsigned images, team IDs). The cache's images are the cache's
        // (it carries no signature of theirs).
        var signatures: [(path: String, signature: SignedImage?)] = []
        for node in graph.nodes where node.cacheOffset == nil { signatures.append((node.path, try CodeSigning.verify(node.image, path: node.path))) }
        try options.signingPolicy.check(signatures)
        report.timings[.parsing] = graph.parseNanoseconds + clock.lap()
        report.images = graph.nodes.map(\.path)

        var plans: [ImagePlan] = []
        for node in graph.nodes { plans.append(try ImagePlan(image: node.image, path: node.path, sliceOffset: node.file.sliceOffset)) }
        let slots = graph.nodes.indices.map { index in
            graph.nodes[index].cacheOffset.map { SharedCacheRegion.Slot(offset: $0, size: plans[index].vmSize, path: plans[index].path) }
        }
        var shared: LaunchMemory.SharedImages?
        if let cache, slots.contains(where: { $0 != nil }) {
            try refuseUnsupported(graph, cache: cache)
            shared = try SharedCachePatches.failed(cache.cache.path) { () throws(ClosureError) in try cache.map(slots: slots) }
        }
        let memory = try LaunchMemory(plans: plans, firstSlide: options.slide, readAhead: true, shared: shared)
        return try memory.releasedOnFailure { () throws(LoadError) in
            report.slide = memory.images[0].slide
            if let range = memory.sharedRange { report.sharedCache = (memory.images.count { $0.inSharedCache }, range.base) }
            report.timings[.mapping] = clock.lap()

            var resolver = try FixupResolver(graph: graph, plans: plans)
            if let cache, shared != nil, let tuple = resolver.interposing.tuples.first {
                throw LoadError.failed(path: cache.cache.path, cause: .incompatible(path: cache.cache.path, what:
                    "\(graph.nodes[tuple.image].path) interposes: a launch with interposing loads its dylibs from their files"))
            }
            var rebaseTime: Int64 = 0, bindTime: Int64 = 0
            let (recorded, patchCount) = try writeFixups(
                graph.nodes.indices, graph: graph, plans: plans, memory: memory, bases: memory.images.map(\.base), resolver: &resolver,
                cache: shared == nil ? nil : cache, record: options.recordFixups,
                afterRebases: { rebaseTime += clock.lap() }, afterBinds: { bindTime += clock.lap() })
            report.timings[.rebase] = rebaseTime
            report.timings[.bind] = bindTime
            report.rebases = resolver.rebases
            report.binds = resolver.binds + patchCount
            // Thread-local descriptors still pointing at `__tlv_bootstrap`, read back from memory.
            let bootstrap = graph.nodes.contains { ThreadLocals.hasDescriptors($0.image) } ? try resolver.flatDefinition(of: "__tlv_bootstrap") : nil
            let threadLocals = try ThreadLocalDiscovery.setups(graph: graph, plans: plans, bootstrap: bootstrap) { (image, slot) throws(LoadError) in
                memory.target(of: try memory.load(image: image, vmOffset: slot))
            }
            let hostServices = try resolver.hostServicesSlot()
            report.symbolLookups = resolver.symbolLookups
            let initializerOrder = InitializerOrder.compute(graph)
            let images = graph.nodes.map(\.image)
            let objc = try ObjCSetup.compute(images: images, paths: report.images, initializerOrder: initializerOrder, memory: memory)
            if let objc {
                try objc.store(into: memory)
                report.timings[.objc] = clock.lap()
            } else {
                report.objcSkipped = ObjCSetup.skipReason(images: images, paths: report.images)
            }
            // What the Objective-C and thread-local steps wrote over fixups, per image (for the digest).
            let laterWrites = LaunchDigest.laterWrites(objc: objc?.writes ?? [], threadLocals: threadLocals, imageCount: graph.nodes.count)
            var initializers: [[UInt64]] = []
            for (index, image) in images.enumerated() { initializers.append(try initializerOffsets(image, index: index, memory: memory)) }
            let mainImage = graph.rootCount - 1
            // The digest rewrites the locations fixed up with pointers; they are worked out
            // again outside the timed launch when the launch did not record them.
            let tail = LaunchTail(
                threadLocals: threadLocals, hostServices: hostServices,
                dynamicLoader: SlowDynamicLoader(graph: graph, plans: plans, memory: memory, options: options, cache: cache), protections: .segments,
                digest: { (memory) throws(LoadError) in
                    var locations = try slideDependentLocations(graph: graph, plans: plans, recorded: options.recordFixups ? recorded : nil, later: laterWrites)
                    if let cache, shared != nil { try addCachePointers(&locations, graph: graph, plans: plans, cache: cache) }
                    return memory.writableDigest(slideDependent: locations,
                                          loaderPointers: LaunchDigest.loaderPointers(threadLocals, hostServices: hostServices, imageCount: graph.nodes.count))
                },
                initializers: initializers, initializerOrder: initializerOrder, objcLoads: objc?.loads ?? [], mainImage: mainImage,
                entryOffset: graph.nodes[mainImage].image.entryPoint?.entryOffset, arch: options.arch)
            try tail.run(memory: memory, request: options, report: &report, clock: &clock)
            return Launch(memory: memory, report: report, fixups: options.recordFixups ? recorded : nil)
        }
    }

    /// Writes into `memory`, which maps the nodes `nodes` of `graph` in order, the fixups of
    /// each node not taken from the shared cache, then with `cache` the cache's patches of those
    /// taken from it (``SharedCachePatches``): per node what was written when `record`, and how
    /// many patches. `afterRebases` and `afterBinds` (each node's, then the patches) time them.
    static func writeFixups(
        _ nodes: Range<Int>, graph: DependencyGraph, plans: [ImagePlan], memory: LaunchMemory, bases: [UInt64],
        resolver: inout FixupResolver, cache: SharedCacheDylibs?, record: Bool,
        afterRebases: () -> Void = {}, afterBinds: () -> Void = {}
    ) throws(LoadError) -> (recorded: [[ResolvedFixup]], patches: Int) {
        var recorded: [[ResolvedFixup]] = []
        for index in nodes {
            // The cache's images were fixed up when it was built.
            guard graph.nodes[index].cacheOffset == nil else {
                if record { recorded.append([]) }
                continue
            }
            var sink = MemoryFixupSink(writer: memory.writer(image: index - nodes.lowerBound), imageBases: bases, recorded: record ? [] : nil)
            try resolver.resolve(image: index, into: &sink, afterRebases: afterRebases)
            afterBinds()
            if let fixups = sink.recorded { recorded.append(fixups) }
        }
        guard let cache else { return (recorded, 0) }
        let patches = try SharedCachePatches.compute(graph: graph, plans: plans, resolver: &resolver, cache: cache)[nodes]
        try memory.openForPatches(patches.map { $0.map(\.vmOffset) })
        var patchCount = 0
        for (position, words) in patches.enumerated() where !words.isEmpty {
            var sink = MemoryFixupSink(writer: memory.writer(image: position), imageBases: bases, recorded: record ? [] : nil)
            for word in words { try sink.take(word) }
            if let fixups = sink.recorded { recorded[position] = fixups }
            patchCount += words.count
        }
        afterBinds()
        return (recorded, patchCount)
    }

    /// Refuses the cache for a launch that needs what only files give here: a cached image
    /// with Objective-C metadata or thread-local variables (set up from their files).
    static func refuseUnsupported(_ graph: DependencyGraph, cache: SharedCacheDylibs) throws(LoadError) {
        for node in graph.nodes where node.cacheOffset != nil {
            let what: String? = ThreadLocals.hasDescriptors(node.image) ? "has thread-local variables"
                : (try? ObjCSections(image: node.image)) != nil ? "has Objective-C metadata" : nil
            if let what {
                throw .failed(path: cache.cache.path, cause: .incompatible(path: cache.cache.path, what:
                    "its \(node.installName ?? node.path) \(what): a launch that needs it loads its dylibs from their files"))
            }
        }
    }

    /// The cache's pointers in the images taken from it (its slide info), added to the
    /// locations the digest counts as pointers: what a dyld3 launch from the cache counts.
    static func addCachePointers(_ locations: inout [[UInt64]], graph: DependencyGraph, plans: [ImagePlan], cache: SharedCacheDylibs) throws(LoadError) {
        let slots = graph.nodes.indices.map { index in graph.nodes[index].cacheOffset.map { (offset: $0, size: plans[index].vmSize) } }
        let pointers = try SharedCachePatches.failed(cache.cache.path) { () throws(ClosureError) in try cache.pointers(slots: slots) }
        for (index, words) in pointers.enumerated() where !words.isEmpty {
            locations[index] = Array(Set(words.map(\.vmOffset) + locations[index])).sorted()
        }
    }

    /// Per image, the locations fixed up with pointers into the region
    /// (``LaunchDigest/slideDependentLocations(_:then:)``), from the recorded fixups or resolved again.
    static func slideDependentLocations(
        graph: DependencyGraph, plans: [ImagePlan], recorded: [[ResolvedFixup]]?, later: [[ResolvedFixup]]
    ) throws(LoadError) -> [[UInt64]] {
        var fixups = recorded ?? []
        if recorded == nil {
            var resolver = try FixupResolver(graph: graph, plans: plans)
            for index in graph.nodes.indices {
                var imageFixups: [ResolvedFixup] = []
                try resolver.resolve(image: index) { (fixup) throws(LoadError) in imageFixups.append(fixup) }
                fixups.append(imageFixups)
            }
        }
        return LaunchDigest.slideDependentLocations(fixups, then: later)
    }

    /// An image's initializers, each `__mod_init_func` slot read back after its rebase was written.
    static func initializerOffsets(_ image: MachOImage, index: Int, memory: LaunchMemory) throws(LoadError) -> [UInt64] {
        let mapped = memory.images[index]
        return try Initializers.offsets(of: image, plan: mapped.plan) { (slot) throws(LoadError) -> UInt64? in
            let offset = try memory.load(image: index, vmOffset: slot) &- mapped.base
            return offset < mapped.plan.vmSize ? offset : nil
        }
    }
}
