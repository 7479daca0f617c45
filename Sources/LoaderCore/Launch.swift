import LaunchPlan
import Pager
import LaunchMemory

/// What to launch and how: the request both launch paths (and `compare`) take.
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
    /// dyld3: write every fixup at launch, or each page's on its first touch (docs/page-in.md).
    public var fixups: FixupsMode
    /// Page-in: the pages one fault fills, the faulting page and up to `faultAround - 1`
    /// more of the same image that receive fixups (1: the faulting page alone).
    public var faultAround: Int = FixupPager.defaultFaultAround
    /// Libraries inserted at launch, in order (`DYLD_INSERT_LIBRARIES`: ``DependencyGraph``).
    public var inserted: [String] = []
    /// Which images the launch accepts by their signatures (docs/code-signing.md, "Policy").
    public var signingPolicy: SigningPolicy = .default
    /// dyld3: verify every mapped page of each signed image against its code slot before
    /// the fixups (`--verify-pages`; ``EagerPageVerification``). dyld2 verifies every page
    /// whatever this says.
    public var verifyPages = false
    /// A prelinked launch: slide the set at this launch, to a new random address, rather
    /// than map its copy slid for this boot (`--slide-per-launch`; docs/prelinked.md).
    public var slidePerLaunch = false

    public init(roots: [String], arch: String, root: String?, slide: UInt64? = nil, run: Bool = true, recordFixups: Bool = false,
                fixups: FixupsMode = .eager) {
        self.roots = roots
        self.arch = arch
        self.root = root
        self.slide = slide
        self.run = run
        self.recordFixups = recordFixups
        self.fixups = fixups
    }
}

/// When the fast path writes fixups: all at launch, or each page's when it is first touched.
public enum FixupsMode: String, Sendable, CaseIterable {
    case eager
    case pageIn = "page-in"
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

/// The last step of every launch, shared by both paths: run the initializers in the order
/// given, then `main`; or record why code does not run (`--no-run`, an image from a stub
/// root, another architecture, no `LC_MAIN`).
public enum LaunchSequence {
    /// Runs `initializers` (per image, offsets from its base) in `order`, then the main
    /// image's entry point. `paths` names the images for the report.
    public static func runInitializersThenMain(
        order: [Int], initializers: [[UInt64]], mainImage: Int, entryOffset: UInt64?,
        paths: [String], arch: String, run: Bool, memory: LaunchMemory,
        objcLoads: [ObjCLoadCall] = [],
        report: inout LaunchReport, clock: inout PhaseClock
    ) throws(LoadError) {
        var functions: [CodeRunner.Function] = []
        report.initializers = []
        // `+load` methods run just before their image's initializers (dyld's notifyObjCInit, then the initializers).
        var loadsByImage: [[ObjCLoadCall]] = Array(repeating: [], count: initializers.count)
        for call in objcLoads where call.image < loadsByImage.count { loadsByImage[call.image].append(call) }
        for index in order {
            for call in loadsByImage[index] {
                let bases = (memory.images[call.method.image].base, memory.images[call.cls.image].base, memory.images[call.selector.image].base)
                functions.append(CodeRunner.Function(
                    image: call.method.image, address: bases.0 &+ call.method.offset,
                    loadArguments: (bases.1 &+ call.cls.offset, bases.2 &+ call.selector.offset)))
            }
            guard !initializers[index].isEmpty else { continue }
            let base = memory.images[index].base
            functions += initializers[index].map { CodeRunner.Function(image: index, address: base &+ $0) }
            report.initializers.append(paths[index])
        }
        if let reason = reasonNotToRun(run: run, arch: arch, memory: memory, paths: paths) {
            report.notRunReason = reason
            return
        }
        _ = clock.lap()
        try CodeRunner.runInitializers(functions, in: memory)
        report.timings[.initializers] = clock.lap()
        guard let entryOffset else {
            report.dynamicLoads = memory.dynamicLoader?.loader.events ?? []
            report.notRunReason = "\(paths[mainImage]) has no LC_MAIN: loaded as a root image, initializers ran, no main to run"
            return
        }
        defer { report.dynamicLoads = memory.dynamicLoader?.loader.events ?? [] }
        report.result = try CodeRunner.runMain(
            CodeRunner.Function(image: mainImage, address: memory.images[mainImage].base &+ entryOffset), in: memory)
        report.ran = true
        report.timings[.main] = clock.lap()
    }

    /// Why the code of a launch mapped in `memory` must not run, or nil when it may: not
    /// asked to (`--no-run`), an image from a stub root (``StubImageMarker``; checked before
    /// the architecture, so such a graph says so on every host), or code of another
    /// architecture. `paths` names the images.
    public static func reasonNotToRun(run: Bool, arch: String, memory: LaunchMemory, paths: [String]) -> String? {
        guard run else { return "--no-run" }
        if let stub = StubImageMarker.firstMarkedImage(in: memory) {
            return "\(paths[stub]) is a stub from a stub root (it carries \(StubImageMarker.segmentName),"
                + "\(StubImageMarker.sectionName)): the graph's code would call into stub data, so none runs"
        }
        guard arch == CodeRunner.hostArchitecture else {
            return "\(arch) code cannot run on this \(CodeRunner.hostArchitecture) host"
        }
        return nil
    }
}
