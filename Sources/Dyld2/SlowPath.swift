import LoaderCore
import MachOReader

/// What to launch and how.
public struct LaunchOptions: Sendable {
    /// The images loaded first: the host executable (if any), then the app.
    public var roots: [String]
    public var arch: String
    /// The system root absolute install names are looked up under.
    public var root: String?
    /// Forces the main image's slide; nil for a random one.
    public var slide: UInt64?
    /// Run initializers and main (when the architecture is the host's).
    public var run: Bool
    /// Keep every resolved fixup of every image in the result (for compare and tests).
    public var recordFixups: Bool

    public init(roots: [String], arch: String, root: String?, slide: UInt64? = nil, run: Bool = true, recordFixups: Bool = false) {
        self.roots = roots
        self.arch = arch
        self.root = root
        self.slide = slide
        self.run = run
        self.recordFixups = recordFixups
    }
}

/// A finished launch: its memory (mapped until released), its report, and optionally every
/// fixup it wrote.
public struct Launch {
    public init(memory: LaunchMemory, report: LaunchReport, fixups: [[ResolvedFixup]]?) {
        self.memory = memory
        self.report = report
        self.fixups = fixups
    }

    public let memory: LaunchMemory
    public let report: LaunchReport
    /// Per image, in load order: every fixup written, when recorded.
    public let fixups: [[ResolvedFixup]]?
}

/// The dyld2 slow path: on every launch, parse every image, resolve every path, interpret
/// every opcode stream or fixup chain, look every bound symbol up by name, then run the
/// initializers and main. Nothing is cached between launches.
public enum SlowPath {
    public static func launch(_ options: LaunchOptions) throws(LoadError) -> Launch {
        var report = LaunchReport(mode: "dyld2")
        var clock = PhaseClock()

        let graph = try DependencyGraph(roots: options.roots, arch: options.arch, root: options.root)
        report.timings[.pathResolution] = clock.lap() - graph.parseNanoseconds
        report.timings[.parsing] = graph.parseNanoseconds
        report.images = graph.nodes.map(\.path)

        var plans: [ImagePlan] = []
        for node in graph.nodes {
            plans.append(try ImagePlan(image: node.image, path: node.path, sliceOffset: node.file.sliceOffset))
        }
        let memory = try LaunchMemory(plans: plans, firstSlide: options.slide)
        report.slide = memory.images[0].slide
        report.timings[.mapping] = clock.lap()

        var resolver = try FixupResolver(graph: graph, plans: plans)
        var recorded: [[ResolvedFixup]] = []
        var rebaseTime: Int64 = 0, bindTime: Int64 = 0
        for index in graph.nodes.indices {
            var imageFixups: [ResolvedFixup] = []
            let base = memory.images[index].base
            let write = { (fixup: ResolvedFixup) throws(LoadError) in
                try memory.store(fixup.value(imageBase: base, memory: memory), image: index, vmOffset: fixup.vmOffset)
                if options.recordFixups { imageFixups.append(fixup) }
            }
            try resolver.resolveRebases(index, write)
            rebaseTime += clock.lap()
            try resolver.resolveBinds(index, write)
            bindTime += clock.lap()
            if options.recordFixups { recorded.append(imageFixups) }
        }
        report.timings[.rebase] = rebaseTime
        report.timings[.bind] = bindTime
        report.rebases = resolver.rebases
        report.binds = resolver.binds
        report.symbolLookups = resolver.lookup.lookups
        report.digest = try clock.excluding { memory.writableDigest() }
        try memory.applyProtections()

        let order = InitializerOrder.compute(graph)
        try run(graph: graph, order: order, memory: memory, options: options, report: &report, clock: &clock)
        report.timings[.total] = clock.total()
        return Launch(memory: memory, report: report, fixups: options.recordFixups ? recorded : nil)
    }

    /// Initializers in dyld's order, then main; or the reason code does not run.
    static func run(graph: DependencyGraph, order: [Int], memory: LaunchMemory, options: LaunchOptions,
                    report: inout LaunchReport, clock: inout PhaseClock) throws(LoadError) {
        var functions: [CodeRunner.Function] = []
        var initialized: [String] = []
        for index in order {
            let found = try initializerAddresses(graph.nodes[index].image, index: index, memory: memory)
            if !found.isEmpty { initialized.append(graph.nodes[index].path) }
            functions += found
        }
        report.initializers = initialized
        guard options.run else {
            report.notRunReason = "--no-run"
            return
        }
        guard options.arch == CodeRunner.hostArchitecture else {
            report.notRunReason = "\(options.arch) code cannot run on this \(CodeRunner.hostArchitecture) host"
            return
        }
        _ = clock.lap()
        try CodeRunner.runInitializers(functions, in: memory)
        report.timings[.initializers] = clock.lap()
        let main = graph.nodes[graph.rootCount - 1]
        if let entry = main.image.entryPoint {
            let index = graph.rootCount - 1
            report.result = try CodeRunner.runMain(
                CodeRunner.Function(image: index, address: memory.images[index].base &+ entry.entryOffset), in: memory)
            report.ran = true
            report.timings[.main] = clock.lap()
        } else {
            report.notRunReason = "\(main.path) has no LC_MAIN: loaded as a root image, no main to run"
        }
    }

    /// The initializer addresses of one image: the (fixed-up) pointers of its
    /// `__mod_init_func` sections and the offsets of its `__init_offsets` sections.
    static func initializerAddresses(_ image: MachOImage, index: Int, memory: LaunchMemory) throws(LoadError) -> [CodeRunner.Function] {
        let mapped = memory.images[index]
        var functions: [CodeRunner.Function] = []
        for section in image.initializerSections {
            let vmOffset = section.address &- mapped.plan.preferredBase
            if section.type == Section.typeModInitFuncPointers {
                for slot in stride(from: UInt64(0), to: section.size / 8 * 8, by: 8) {
                    let pointer = try memory.load(image: index, vmOffset: vmOffset + slot)
                    functions.append(CodeRunner.Function(image: index, address: pointer))
                }
            } else {
                do {
                    for offset in try image.initializerOffsets(in: section) {
                        functions.append(CodeRunner.Function(image: index, address: mapped.base &+ UInt64(offset)))
                    }
                } catch {
                    throw .malformed(error.inFile(mapped.plan.path))
                }
            }
        }
        return functions
    }
}
