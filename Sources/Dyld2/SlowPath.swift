import LoaderCore
import MachOReader
import LaunchPlan
import LaunchMemory
import RuntimeServices

/// The dyld2 slow path: on every launch, parse every image, resolve every path, interpret
/// every opcode stream or fixup chain, look every bound symbol up by name, then run the
/// initializers and main. Nothing is cached between launches.
package enum SlowPath {
    package static func launch(_ options: LaunchOptions) throws(LoadError) -> Launch {
        var report = LaunchReport(mode: "dyld2")
        var clock = PhaseClock()

        let graph = try DependencyGraph(roots: options.roots, inserted: options.inserted, arch: options.arch, root: options.root)
        report.timings[.pathResolution] = clock.lap() - graph.parseNanoseconds
        // Every signed image verifies whole before anything is mapped, then the policy decides
        // by what verified (unsigned images, team IDs).
        var signatures: [(path: String, signature: SignedImage?)] = []
        for node in graph.nodes { signatures.append((node.path, try CodeSigning.verify(node.image, path: node.path))) }
        try options.signingPolicy.check(signatures)
        report.timings[.parsing] = graph.parseNanoseconds + clock.lap()
        report.images = graph.nodes.map(\.path)

        var plans: [ImagePlan] = []
        for node in graph.nodes { plans.append(try ImagePlan(image: node.image, path: node.path, sliceOffset: node.file.sliceOffset)) }
        let memory = try LaunchMemory(plans: plans, firstSlide: options.slide, readAhead: true)
        return try memory.releasedOnFailure { () throws(LoadError) in
            report.slide = memory.images[0].slide
            report.timings[.mapping] = clock.lap()

            var resolver = try FixupResolver(graph: graph, plans: plans)
            var recorded: [[ResolvedFixup]] = []
            var rebaseTime: Int64 = 0, bindTime: Int64 = 0
            let bases = memory.images.map(\.base)
            for index in graph.nodes.indices {
                var sink = MemoryFixupSink(writer: memory.writer(image: index), imageBases: bases, recorded: options.recordFixups ? [] : nil)
                try resolver.resolve(image: index, into: &sink) { rebaseTime += clock.lap() }
                bindTime += clock.lap()
                if let fixups = sink.recorded { recorded.append(fixups) }
            }
            report.timings[.rebase] = rebaseTime
            report.timings[.bind] = bindTime
            report.rebases = resolver.rebases
            report.binds = resolver.binds
            // Thread-local descriptors still pointing at `__tlv_bootstrap`, read back from memory.
            let bootstrap = graph.nodes.contains { ThreadLocals.hasDescriptors($0.image) } ? try resolver.flatDefinition(of: "__tlv_bootstrap") : nil
            let threadLocals = try ThreadLocalDiscovery.setups(graph: graph, plans: plans, bootstrap: bootstrap) { (image, slot) throws(LoadError) in
                memory.target(of: try memory.load(image: image, vmOffset: slot))
            }
            let hostServices = try resolver.hostServicesSlot()
            report.symbolLookups = resolver.symbolLookups
            let initializerOrder = InitializerOrder.compute(graph)
            let objc = try ObjCSetup.compute(
                images: graph.nodes.map(\.image), paths: report.images, initializerOrder: initializerOrder, memory: memory)
            if let objc {
                try objc.store(into: memory)
                report.timings[.objc] = clock.lap()
            } else {
                report.objcSkipped = ObjCSetup.skipReason(images: graph.nodes.map(\.image), paths: report.images)
            }
            // What the Objective-C and thread-local steps wrote over fixups, per image (for the digest).
            let laterWrites = LaunchDigest.laterWrites(objc: objc?.writes ?? [], threadLocals: threadLocals, imageCount: graph.nodes.count)
            var initializers: [[UInt64]] = []
            for index in graph.nodes.indices {
                initializers.append(try initializerOffsets(graph.nodes[index].image, index: index, memory: memory))
            }
            let mainImage = graph.rootCount - 1
            // The digest rewrites the locations fixed up with pointers; they are worked out
            // again outside the timed launch when the launch did not record them.
            let tail = LaunchTail(
                threadLocals: threadLocals, hostServices: hostServices,
                dynamicLoader: SlowDynamicLoader(graph: graph, plans: plans, memory: memory, options: options), protections: .segments,
                digest: { (memory) throws(LoadError) in
                    memory.writableDigest(slideDependent: try slideDependentLocations(
                        graph: graph, plans: plans, recorded: options.recordFixups ? recorded : nil, later: laterWrites),
                                          loaderPointers: LaunchDigest.loaderPointers(threadLocals, hostServices: hostServices, imageCount: graph.nodes.count))
                },
                initializers: initializers, initializerOrder: initializerOrder, objcLoads: objc?.loads ?? [], mainImage: mainImage,
                entryOffset: graph.nodes[mainImage].image.entryPoint?.entryOffset, arch: options.arch)
            try tail.run(memory: memory, request: options, report: &report, clock: &clock)
            return Launch(memory: memory, report: report, fixups: options.recordFixups ? recorded : nil)
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
