import LaunchPlan
import Pager
import LaunchMemory
import RuntimeServices

/// What to launch and how: the request both launch paths (and `compare`) take.
package struct LaunchOptions: Sendable {
    /// The images loaded first: the host executable (if any), then the app.
    package var roots: [String]
    package var arch: String
    /// The system root absolute install names are looked up under.
    package var root: String?
    /// Forces the main image's slide; nil for a random one.
    package var slide: UInt64?
    /// Run initializers and main (when the architecture is the host's).
    package var run: Bool
    /// Keep every resolved fixup in the result (for compare and tests).
    package var recordFixups: Bool
    /// dyld3: write every fixup at launch, or each page's on its first touch (docs/page-in.md).
    package var fixups: FixupsMode
    /// Page-in: the pages one fault fills (1: the faulting page alone).
    package var faultAround: Int = FixupPager.defaultFaultAround
    /// Libraries inserted at launch, in order (`DYLD_INSERT_LIBRARIES`: ``DependencyGraph``).
    package var inserted: [String] = []
    /// Which images the launch accepts by their signatures (docs/code-signing.md, "Policy").
    package var signingPolicy: SigningPolicy = .default
    /// dyld3 `--verify-pages`: every mapped page of signed images checked before the fixups
    /// (``EagerPageVerification``). dyld2 verifies every page whatever this says.
    package var verifyPages = false
    /// A prelinked launch slides the set now rather than map its copy slid for this boot
    /// (`--slide-per-launch`; docs/prelinked.md).
    package var slidePerLaunch = false
    /// dyld2: the shared cache its dylibs are taken from (`--shared-cache`); nil loads every
    /// image from its file.
    package var sharedCache: SharedCacheRequest?

    package init(roots: [String], arch: String, root: String?, slide: UInt64? = nil, run: Bool = true, recordFixups: Bool = false,
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

/// The shared cache a dyld2 launch takes the dylibs it holds from: its path, the directory
/// its copy slid for the boot is kept in (the closures'), and whether a cache that cannot be
/// used fails the launch (a `PATH` given) or leaves it to the files (`auto`).
package struct SharedCacheRequest: Sendable, Equatable {
    package var path: String
    package var slidCopyDirectory: String
    package var required: Bool

    package init(path: String, slidCopyDirectory: String, required: Bool) {
        (self.path, self.slidCopyDirectory, self.required) = (path, slidCopyDirectory, required)
    }
}

/// When the fast path writes fixups: all at launch, or each page's when it is first touched.
package enum FixupsMode: String, Sendable, CaseIterable {
    case eager
    case pageIn = "page-in"
}

/// A finished launch: its memory (mapped until released), its report, and optionally every fixup it wrote.
package struct Launch {
    package init(memory: LaunchMemory, report: LaunchReport, fixups: [[ResolvedFixup]]?) {
        (self.memory, self.report, self.fixups) = (memory, report, fixups)
    }

    package let memory: LaunchMemory
    package let report: LaunchReport
    /// Per image, in load order: every fixup written, when recorded.
    package let fixups: [[ResolvedFixup]]?
}

/// The steps every launch ends with once its images are mapped and fixed up, whatever their
/// source: the thread-local step, `dlopen` attached, the digest, the final protections, then
/// `+load` methods and initializers in order, then `main`. The one place a launch runs code.
package struct LaunchTail {
    /// How the images get their final protections.
    package enum Protections {
        /// Segment by segment, from each image's plan.
        case segments
        /// A prelinked range's runs (``LaunchMemory/applyPrelinkedProtections()``).
        case prelinkedRange
        /// Mapped with them already (a copy slid for the boot).
        case asMapped
    }

    package var threadLocals: [ThreadLocalSetup]
    package var hostServices: HostServicesSlot?
    /// Who answers the launch's `dlopen`s.
    package var dynamicLoader: DynamicLoader
    package var protections: Protections
    /// The digest of the launch's memory; nil under page-in (it would fault every page in).
    package var digest: ((LaunchMemory) throws(LoadError) -> UInt64)?
    /// Per image, in load order: its initializers (offsets from its base).
    package var initializers: [[UInt64]]
    package var initializerOrder: [Int]
    /// `+load` methods, each run just before its image's initializers.
    package var objcLoads: [ObjCLoadCall]
    package var mainImage: Int
    package var entryOffset: UInt64?
    package var arch: String

    package init(threadLocals: [ThreadLocalSetup], hostServices: HostServicesSlot?, dynamicLoader: DynamicLoader, protections: Protections,
                 digest: ((LaunchMemory) throws(LoadError) -> UInt64)?, initializers: [[UInt64]], initializerOrder: [Int],
                 objcLoads: [ObjCLoadCall], mainImage: Int, entryOffset: UInt64?, arch: String) {
        self.threadLocals = threadLocals
        self.hostServices = hostServices
        self.dynamicLoader = dynamicLoader
        self.protections = protections
        self.digest = digest
        self.initializers = initializers
        self.initializerOrder = initializerOrder
        self.objcLoads = objcLoads
        self.mainImage = mainImage
        self.entryOffset = entryOffset
        self.arch = arch
    }

    package func run(memory: LaunchMemory, request: LaunchOptions, report: inout LaunchReport, clock: inout PhaseClock) throws(LoadError) {
        try ThreadLocals.apply(threadLocals, hostServices: hostServices, memory: memory)
        memory.attach(dynamicLoader, table: hostServices.map { memory.images[$0.image].base &+ $0.vmOffset })
        let when: LaunchDigest = digest == nil ? .none : request.run ? .beforeCode : .afterLaunch
        report.digest = nil
        if when == .beforeCode, let digest { report.digest = try clock.excluding { () throws(LoadError) in try digest(memory) } }
        switch protections {
        case .segments: try memory.applyProtections()
        case .prelinkedRange: try memory.applyPrelinkedProtections()
        case .asMapped: break
        }
        try runInitializersThenMain(memory: memory, run: request.run, paths: report.images, report: &report, clock: &clock)
        report.timings[.total] = clock.total()
        if when == .afterLaunch, let digest { report.digest = try digest(memory) }
    }

    /// Runs the initializers in order (each image's `+load` methods first), then `main`; or records why code does not run.
    func runInitializersThenMain(memory: LaunchMemory, run: Bool, paths: [String], report: inout LaunchReport, clock: inout PhaseClock) throws(LoadError) {
        var functions: [CodeRunner.Function] = []
        report.initializers = []
        // dyld's notifyObjCInit: `+load` methods just before their image's initializers.
        var loadsByImage: [[ObjCLoadCall]] = Array(repeating: [], count: initializers.count)
        for call in objcLoads where call.image < loadsByImage.count { loadsByImage[call.image].append(call) }
        for index in initializerOrder {
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
        if let reason = Self.reasonNotToRun(run: run, arch: arch, memory: memory, paths: paths) {
            report.notRun = reason
            return
        }
        _ = clock.lap()
        try CodeRunner.runInitializers(functions, in: memory)
        report.timings[.initializers] = clock.lap()
        defer { report.dynamicLoads = memory.dynamicLoader?.loader.events ?? [] }
        guard let entryOffset else {
            report.notRun = .noMain(path: paths[mainImage])
            return
        }
        report.result = try CodeRunner.runMain(
            CodeRunner.Function(image: mainImage, address: memory.images[mainImage].base &+ entryOffset), in: memory)
        report.ran = true
        report.timings[.main] = clock.lap()
    }

    /// Why the code mapped in `memory` must not run, or nil: `--no-run`, a stub root's image
    /// (``StubImageMarker``; before the architecture, so every host says so), or another architecture.
    package static func reasonNotToRun(run: Bool, arch: String, memory: LaunchMemory, paths: [String]) -> NotRunReason? {
        guard run else { return .notAsked }
        if let stub = StubImageMarker.firstMarkedImage(in: memory) { return .stubImage(path: paths[stub]) }
        guard arch == CodeRunner.hostArchitecture else { return .otherArchitecture(arch) }
        return nil
    }
}

extension DynamicLoadBook {
    /// Records a `dlopen` of `requested` (`via`: how) that mapped the images `paths` into
    /// `memory`, and returns the initializers of the images of `memory` in `order` (each
    /// image's `initializers(image)`), none when code must not run there
    /// (``LaunchTail/reasonNotToRun(run:arch:memory:paths:)``). The caller runs them once the
    /// `dlopen` is committed: an initializer may call `dlopen` itself.
    package mutating func recordOpen(
        _ requested: String, via: String, memory: LaunchMemory, paths: [String], order: [Int], run: Bool, arch: String,
        initializers: (Int) throws(LoadError) -> [UInt64]
    ) throws(LoadError) -> [CodeRunner.Function] {
        var functions: [CodeRunner.Function] = []
        var initialized: [String] = []
        for image in order {
            let offsets = try initializers(image)
            guard !offsets.isEmpty else { continue }
            functions += offsets.map { CodeRunner.Function(image: image, address: memory.images[image].base &+ $0) }
            initialized.append(paths[image])
        }
        let runs = LaunchTail.reasonNotToRun(run: run, arch: arch, memory: memory, paths: paths) == nil
        record(DynamicLoadEvent(requested: requested, loaded: paths, initialized: runs ? initialized : [], via: via))
        return runs ? functions : []
    }
}
