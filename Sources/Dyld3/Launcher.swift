import ClosureFormat
import ClosureCache
import LaunchPlan
import LoaderCore
import LaunchMemory

/// How far a dyld3 launch trusts the disk, and what it may build on the way: one value per
/// launch, passed to it (nothing process-wide changes what a launch checks).
public struct LaunchConfiguration {
    /// Hash every image's content even when stat says it is unchanged (catches a change
    /// made through an existing shared writable mapping, which keeps size, mtime, ctime
    /// and inode; costs a read of every image per launch). Images `dlopen` adds too.
    public var alwaysHashContent: Bool
    /// Use only closures and sets signed by this key (`--trust`).
    public var trustKey: ClosureTrustKey?
    /// What builds a dlopen closure at run time, for a path the launch closure has none for
    /// (`DlopenClosureBuilder.build`, in ClosureBuild); without one such a `dlopen` fails and
    /// says to install one.
    public var dlopenClosures: DlopenBuilder?
    /// Whether each signed image's CodeDirectory is hashed against its recorded cdHash.
    /// Only `dyld3 bench` turns it off, for the launches it times to measure what the check
    /// costs (docs/code-signing.md); no command-line option reaches it.
    package var checksCodeDirectories = true

    /// What builds a dlopen closure at run time: for `path`, requested in a launch of
    /// `launch` whose images so far are `loaded`, after the `dlopen`s of `earlier`.
    public typealias DlopenBuilder = @Sendable (_ path: String, _ request: LaunchOptions, _ launch: LaunchClosure, _ loaded: [ClosureImage],
                                                _ earlier: [String]) throws(LoadError) -> DlopenResolution

    public init(alwaysHashContent: Bool = false, trustKey: ClosureTrustKey? = nil, dlopenClosures: DlopenBuilder? = nil) {
        self.alwaysHashContent = alwaysHashContent
        self.trustKey = trustKey
        self.dlopenClosures = dlopenClosures
    }

    /// How an image's identity is checked in a launch with this configuration.
    var identityChecks: IdentityChecks {
        IdentityChecks(alwaysHash: alwaysHashContent, codeDirectory: checksCodeDirectories)
    }
}

/// One source of images for a dyld3 launch: a per-image closure (``ClosureLaunchSource``), a
/// prelinked set slid at launch or its copy slid for this boot (``PrelinkedLaunchSource``).
/// A source opens and checks what it reads, maps the images (its two threads overlapping
/// the two where it can) and writes the fixups the mapping left; ``Launcher`` runs the rest.
protocol LaunchSource {
    /// The report's mode.
    var mode: String { get }
    /// Opens, checks and maps; everything the source refuses is refused here, before any
    /// store into the images. The memory returned is the launch's: the launcher owns it.
    func map(_ launch: inout LaunchState) throws -> MappedLaunch
    /// Writes the fixups `mapped` still needs (eagerly; a page-in launch's are written on
    /// first touch; a copy slid for the boot needs none).
    func writeFixups(_ mapped: MappedLaunch, _ launch: inout LaunchState) throws
}

/// What one launch carries from step to step.
struct LaunchState {
    let request: LaunchOptions
    let configuration: LaunchConfiguration
    /// The launch's second core (``LaunchHelper``), when its source uses one; given back
    /// before any protection changes.
    let helper: LaunchHelper?
    var report: LaunchReport
    var clock = PhaseClock()

    init(mode: String, request: LaunchOptions, configuration: LaunchConfiguration, helper: LaunchHelper?) {
        self.request = request
        self.configuration = configuration
        self.helper = helper
        report = LaunchReport(mode: mode)
    }
}

/// A source's images, mapped.
struct MappedLaunch {
    /// The closure that describes them (a prelinked set's own).
    let closure: LaunchClosure
    /// The file the closure came from, named in every refusal.
    let path: String
    let memory: LaunchMemory
    /// How they get their final protections.
    let protections: LaunchTail.Protections
    /// Whether their fixups are written on first touch (no digest is then taken).
    let pagedIn: Bool
    /// What the source still writes after the mapping.
    let pending: PendingFixups
    /// The digest of the launch's memory, rewriting what the fixups made slide-dependent.
    let digest: (LaunchMemory) throws(LoadError) -> UInt64
}

/// The fixups a mapping leaves to write before the launch's last steps.
enum PendingFixups {
    /// These images' fixups from the closure's runs, then its Objective-C words.
    case images([Int])
    /// A prelinked set's slide runs, over its whole range.
    case slide(PrelinkedSet)
    /// None: a copy slid for this boot, mapped as it lies.
    case none
}

/// The one dyld3 launcher: every source of images runs open → map → fixups, then the
/// launch's last steps (``LaunchTail``: thread-locals → `dlopen` attached → protections →
/// initializers → `main`). Once mapped, the memory is released on every failure, here only.
enum Launcher {
    static func run(_ source: some LaunchSource, request: LaunchOptions, configuration: LaunchConfiguration,
                    helper: LaunchHelper?) throws -> Launch {
        var launch = LaunchState(mode: source.mode, request: request, configuration: configuration, helper: helper)
        defer { helper?.finish() }
        let mapped = try source.map(&launch)
        let memory = mapped.memory
        return try memory.releasedOnFailure { () throws -> Launch in
            try source.writeFixups(mapped, &launch)
            helper?.finish()
            let closure = mapped.closure
            let tail = LaunchTail(
                threadLocals: closure.threadLocals.setups, hostServices: closure.threadLocals.hostServices,
                dynamicLoader: ClosureDynamicLoader(launch: closure, closurePath: mapped.path, request: request, configuration: configuration,
                                                    memory: memory),
                protections: mapped.protections, digest: mapped.pagedIn ? nil : mapped.digest,
                initializers: closure.images.map(\.initializers), initializerOrder: closure.initializerOrder, objcLoads: closure.objc.loads,
                mainImage: closure.rootCount - 1, entryOffset: closure.entryOffset, arch: closure.arch)
            try tail.run(memory: memory, request: request, report: &launch.report, clock: &launch.clock)
            if closure.objc.bindRuns.isEmpty { launch.report.objcSkipped = .notInClosure(prelinked: source.mode == PrelinkedLaunch.mode) }
            launch.report.pagesFilled = memory.pager?.pagesFilled ?? 0
            return Launch(memory: memory, report: launch.report, fixups: nil)
        }
    }

    /// Refuses a closure built for another request (roots, architecture, root or signature policy).
    static func checkBinding(_ binding: ClosureBinding, request: LaunchOptions, closurePath: String) throws(ClosureError) {
        let expected = ClosureBinding(request: request.roots, inserted: request.inserted, arch: request.arch, root: request.root,
                                      policy: request.signingPolicy)
        if let mismatch = binding.mismatch(with: expected) {
            throw ClosureError.mismatch(path: closurePath, field: mismatch.field, expected: mismatch.expected, found: mismatch.found)
        }
    }

    /// Holds `closure`'s images to the request's signing policy, from what the closure
    /// recorded (each record tied to its file by the cdHash identity): nothing is parsed.
    static func checkSigningPolicy(_ closure: LaunchClosure, request: LaunchOptions) throws(LoadError) {
        guard request.signingPolicy != .default else { return }
        try request.signingPolicy.check(closure.images.map { ($0.path, $0.identity.signature) })
    }
}
