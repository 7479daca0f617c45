import ClosureFormat
import ClosureCache
import LaunchPlan
import MachOReader
import LoaderCore
import LaunchMemory

/// How far a dyld3 launch trusts the disk, and what it may build on the way: one value per
/// launch (nothing process-wide changes what a launch checks).
package struct LaunchConfiguration {
    /// Hash every image's content (`dlopen`'s too) even when stat says it is unchanged: catches
    /// a change through a shared writable mapping, which keeps size, times and inode.
    package var alwaysHashContent: Bool
    /// Use only closures and sets signed by this key (`--trust`).
    package var trustKey: ClosureTrustKey?
    /// What builds a dlopen closure for a path the launch closure has none for
    /// (`DlopenClosureBuilder.build`); without one such a `dlopen` fails.
    package var dlopenClosures: DlopenBuilder?
    /// Whether each signed image's CodeDirectory is hashed against its recorded cdHash. Only
    /// `dyld3 bench` turns it off, to measure what the check costs (docs/code-signing.md).
    package var checksCodeDirectories = true

    /// Builds a dlopen closure for `path` in a launch of `launch` whose images so far are
    /// `loaded`, after the `dlopen`s of `earlier`; `mapped`: loaded image i's memory, read where
    /// the launch mapped it, when all of it can be; `state`: what its last build in
    /// this launch kept (``BuiltDlopen/builderState``), if any.
    package typealias DlopenBuilder = @Sendable (_ path: String, _ request: LaunchOptions, _ launch: LaunchClosure, _ loaded: [ClosureImage],
                                                _ mapped: (Int) -> ByteView?, _ earlier: [String], _ state: (any Sendable)?) throws(LoadError)
                                                -> DlopenResolution

    package init(alwaysHashContent: Bool = false, trustKey: ClosureTrustKey? = nil, dlopenClosures: DlopenBuilder? = nil) {
        (self.alwaysHashContent, self.trustKey, self.dlopenClosures) = (alwaysHashContent, trustKey, dlopenClosures)
    }

    var identityChecks: IdentityChecks { IdentityChecks(alwaysHash: alwaysHashContent, codeDirectory: checksCodeDirectories) }
}

/// One source of images for a dyld3 launch: a per-image closure (``ClosureLaunchSource``) or a
/// prelinked set (``PrelinkedLaunchSource``). It opens and checks what it reads, maps the
/// images and writes the fixups the mapping left; ``Launcher`` runs the rest.
protocol LaunchSource {
    /// The report's mode.
    var mode: String { get }
    /// Opens, checks and maps; everything the source refuses is refused here, before any store
    /// into the images. The launcher owns the memory returned.
    func map(_ launch: inout LaunchState) throws -> MappedLaunch
    /// Writes the fixups `mapped` still needs (``PendingFixups``).
    func writeFixups(_ mapped: MappedLaunch, _ launch: inout LaunchState) throws
}

/// What one launch carries from step to step.
struct LaunchState {
    let request: LaunchOptions
    let configuration: LaunchConfiguration
    /// The launch's second core, when its source uses one; given back before protections change.
    let helper: LaunchHelper?
    var report: LaunchReport
    var clock = PhaseClock()
}

/// A source's images, mapped.
struct MappedLaunch {
    /// The closure that describes them (a prelinked set's own).
    let closure: LaunchClosure
    /// The file the closure came from, named in every refusal.
    let path: String
    let memory: LaunchMemory
    let protections: LaunchTail.Protections
    /// Whether their fixups are written on first touch (no digest is then taken).
    let pagedIn: Bool
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

/// The one dyld3 launcher: every source runs open → map → fixups, then the launch's last steps
/// (``LaunchTail``). Once mapped, the memory is released on every failure, here only.
enum Launcher {
    static func run(_ source: some LaunchSource, request: LaunchOptions, configuration: LaunchConfiguration,
                    helper: LaunchHelper?) throws -> Launch {
        var launch = LaunchState(request: request, configuration: configuration, helper: helper, report: LaunchReport(mode: source.mode))
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
                                      policy: request.signingPolicy, recorded: binding)
        if let mismatch = binding.mismatch(with: expected) {
            throw ClosureError.mismatch(path: closurePath, field: mismatch.field, expected: mismatch.expected, found: mismatch.found)
        }
    }

    /// Holds `closure`'s images to the request's signing policy, from what the closure recorded
    /// (tied to each file by the cdHash identity): nothing is parsed.
    static func checkSigningPolicy(_ closure: LaunchClosure, request: LaunchOptions) throws(LoadError) {
        guard request.signingPolicy != .default else { return }
        try request.signingPolicy.check(closure.images.map { ($0.path, $0.identity.signature) })
    }
}
