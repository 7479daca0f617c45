import Dyld2
import LoaderCore
import MachOReader
import LaunchPlan
import LaunchMemory
import RuntimeServices

/// Everything a launch works out before it touches memory: the graph, the mapping plans, every
/// fixup resolved, the initializers and the entry point; the closure builder writes it down.
/// Each image's fixups are handed to the caller as soon as they are resolved, not kept.
package struct LaunchAnalysis: Sendable {
    package let graph: DependencyGraph
    package let plans: [ImagePlan]
    /// Node indices in initializer order.
    package let initializerOrder: [Int]
    /// Per image: its initializer functions as offsets from its preferred base.
    package let initializers: [[UInt64]]
    /// The main image's entry point (offset from its base), if it has LC_MAIN.
    package let entryOffset: UInt64?
    package let symbolLookups: Int
    /// The Objective-C step's writes and `+load` calls, worked out on a mapped, fixed-up
    /// copy of the launch (nil when the app needs no such step).
    package let objc: ObjCSetup?
    /// The thread-local-variable step's setups and the host services table (``ThreadLocals``).
    package let threadLocals: [ThreadLocalSetup]
    package let hostServices: HostServicesSlot?

    /// Analyses the launch of `roots`; `consume` receives each image's plan and fixups
    /// (rebases first, then binds, as resolved), in load order.
    package init(
        roots: [String], inserted: [String] = [], arch: String, root: String?,
        consume: (_ plan: ImagePlan, _ fixups: [ResolvedFixup]) throws(LoadError) -> Void
    ) throws(LoadError) {
        graph = try DependencyGraph(roots: roots, inserted: inserted, arch: arch, root: root)
        var plans: [ImagePlan] = []
        for node in graph.nodes {
            plans.append(try ImagePlan(image: node.image, path: node.path, sliceOffset: node.file.sliceOffset))
        }
        self.plans = plans
        var resolver = try FixupResolver(graph: graph, plans: plans)
        // The Objective-C step reads fixed-up memory: map the images once, write their fixups too.
        let memory = ObjCSetup.isNeeded(images: graph.nodes.map(\.image)) ? try LaunchMemory(plans: plans, firstSlide: nil) : nil
        defer { memory?.release() }
        var initializers: [[UInt64]] = []
        // Per image with thread-local descriptors: what each descriptor's first word is fixed up to.
        var thunkFixups: [Int: [UInt64: ResolvedFixup.Kind]] = [:]
        for index in graph.nodes.indices {
            var imageFixups: [ResolvedFixup] = []
            try resolver.resolve(image: index) { (fixup) throws(LoadError) in imageFixups.append(fixup) }
            if ThreadLocals.hasDescriptors(graph.nodes[index].image) {
                var kinds: [UInt64: ResolvedFixup.Kind] = [:]
                for fixup in imageFixups { kinds[fixup.vmOffset] = fixup.kind }
                thunkFixups[index] = kinds
            }
            initializers.append(try ClosureBuilder.initializerOffsets(graph.nodes[index].image, plan: plans[index], fixups: imageFixups))
            if let memory {
                let writer = memory.writer(image: index)
                let bases = memory.images.map(\.base)
                for fixup in imageFixups { try writer.store(fixup.value(imageBase: bases[index], imageBases: bases), vmOffset: fixup.vmOffset) }
            }
            try consume(plans[index], imageFixups)
        }
        let bootstrap = thunkFixups.isEmpty ? nil : try resolver.flatDefinition(of: "__tlv_bootstrap")
        threadLocals = try ThreadLocalDiscovery.setups(graph: graph, plans: plans, bootstrap: bootstrap) { image, slot in
            ThreadLocalDiscovery.thunkTarget(of: thunkFixups[image] ?? [:], slot: slot)
        }
        hostServices = try resolver.hostServicesSlot()
        symbolLookups = resolver.symbolLookups
        let order = InitializerOrder.compute(graph), nodes = graph.nodes
        initializerOrder = order
        objc = try memory.flatMap { (memory) throws(LoadError) in
            try ObjCSetup.compute(images: nodes.map(\.image), paths: nodes.map(\.path), initializerOrder: order, memory: memory)
        }
        self.initializers = initializers
        entryOffset = graph.nodes[graph.rootCount - 1].image.entryPoint?.entryOffset
    }
}
