import LoaderCore
import MachOReader

/// Everything a launch works out before it touches memory: the graph, the mapping plans,
/// every fixup resolved, the initializers and the entry point. The closure builder runs
/// this once at install time and writes it down; the slow path does the same work inline
/// on every launch.
public struct LaunchAnalysis: Sendable {
    public let graph: DependencyGraph
    public let plans: [ImagePlan]
    /// Per image, in load order: rebases first, then binds, as resolved.
    public let fixups: [[ResolvedFixup]]
    /// Node indices in initializer order.
    public let initializerOrder: [Int]
    /// Per image: its initializer functions as offsets from its preferred base.
    public let initializers: [[UInt64]]
    /// The main image's entry point (offset from its base), if it has LC_MAIN.
    public let entryOffset: UInt64?
    public let symbolLookups: Int

    public init(roots: [String], arch: String, root: String?) throws(LoadError) {
        graph = try DependencyGraph(roots: roots, arch: arch, root: root)
        var plans: [ImagePlan] = []
        for node in graph.nodes {
            plans.append(try ImagePlan(image: node.image, path: node.path, sliceOffset: node.file.sliceOffset))
        }
        self.plans = plans
        var resolver = try FixupResolver(graph: graph, plans: plans)
        var fixups: [[ResolvedFixup]] = []
        for index in graph.nodes.indices {
            var imageFixups: [ResolvedFixup] = []
            let record = { (fixup: ResolvedFixup) throws(LoadError) in imageFixups.append(fixup) }
            try resolver.resolveRebases(index, record)
            try resolver.resolveBinds(index, record)
            fixups.append(imageFixups)
        }
        self.fixups = fixups
        symbolLookups = resolver.symbolLookups
        initializerOrder = InitializerOrder.compute(graph)
        var initializers: [[UInt64]] = []
        for index in graph.nodes.indices {
            initializers.append(try LaunchAnalysis.initializerOffsets(graph.nodes[index], plan: plans[index], fixups: fixups[index]))
        }
        self.initializers = initializers
        entryOffset = graph.nodes[graph.rootCount - 1].image.entryPoint?.entryOffset
    }

    /// An image's initializers: `__init_offsets` entries as they are, and `__mod_init_func`
    /// slots through the rebase that fixes each one up.
    static func initializerOffsets(_ node: DependencyGraph.Node, plan: ImagePlan, fixups: [ResolvedFixup]) throws(LoadError) -> [UInt64] {
        var offsets: [UInt64] = []
        for section in node.image.initializerSections {
            if section.type == Section.typeModInitFuncPointers {
                let first = section.address &- plan.preferredBase
                for slot in stride(from: UInt64(0), to: section.size / 8 * 8, by: 8) {
                    // The last fixup at a location is the one that stays in memory.
                    guard let fixup = fixups.last(where: { $0.vmOffset == first + slot }),
                          case let .rebase(targetOffset, _) = fixup.kind else {
                        throw .unusable(path: node.path, reason: "initializer slot at offset 0x\(String(first + slot, radix: 16)) is not rebased into the image")
                    }
                    offsets.append(targetOffset)
                }
            } else {
                do {
                    offsets += try node.image.initializerOffsets(in: section).map(UInt64.init)
                } catch {
                    throw .malformed(error.inFile(node.path))
                }
            }
        }
        return offsets
    }
}
