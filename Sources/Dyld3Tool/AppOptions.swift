import ClosureBuild
import AppArchive
import ArgumentParser
import Dyld3
import Foundation
import ClosureCache
import LoaderCore
import ClosureFormat
import LaunchPlan
import LoaderSystem
import Pager
import SharedCacheBuild

/// The options every command that loads an app shares: where absolute install names are
/// found, which slice, which host a bundle or dylib goes into, and which closure cache.
struct AppOptions: ParsableArguments {
    @Option(help: "The system root absolute install names are looked up under.") var root: String?
    @Option(help: "The architecture. Default: the host's if the file has it, else its first slice.") var arch: String?
    @Option(help: "The host executable a bundle or dylib is loaded into, as dlopen loads it. Default: ROOT/bin/host when it exists.") var host: String?
    @Option(help: "The closure cache. Default: $DYLD3_CACHE, else cache/.") var cache: String?

    @Option(name: .customLong("insert"), help: ArgumentHelp(
        "A dylib to insert, as DYLD_INSERT_LIBRARIES does: loaded after the main executable and before its dependencies, its initializers first, its interposing applied (repeatable, in order).",
        valueName: "dylib"))
    var insert: [String] = []

    /// The `--insert` libraries, each checked to exist; a path with a `:` cannot be one
    /// (the binding lists them joined by `:`, as `DYLD_INSERT_LIBRARIES` does).
    func insertedLibraries() throws -> [String] {
        for path in insert {
            guard !path.contains(":") else {
                throw CommandFailure(what: "--insert \(path)", why: "a path with ':' cannot be inserted (DYLD_INSERT_LIBRARIES separates paths by ':')", kind: "bad-insert")
            }
            guard let status = FileStatus.of(path), !status.isDirectory else {
                throw CommandFailure(what: "--insert \(path)", why: FileStatus.of(path) == nil ? "no such file" : "is a directory, not a dylib", kind: "bad-insert")
            }
        }
        return insert
    }

    /// The launch roots and architecture for `app`; a `--root` that is not a directory is
    /// reported as such rather than as the first library it fails to hold.
    func roots(for app: String, arch: String? = nil) throws -> (paths: [String], arch: String) {
        try checkRoot()
        return try AppLocator.roots(for: try AppLocator.unpacked(app, cache: closureCache), arch: arch ?? self.arch, root: root, host: host)
    }

    /// The architectures of `app`'s main image, in the file's order; only `--arch` when given.
    func architectures(of app: String) throws -> [String] {
        if let arch { return [arch] }
        return try ImageFile.architectures(path: try AppLocator.mainImage(of: try AppLocator.unpacked(app, cache: closureCache)))
    }

    /// The launch of `app` these options ask for: its roots and architecture (`arch`, else
    /// `--arch`, else the default), the root, the inserted libraries and the signature policy.
    func launchOptions(for app: String, arch: String? = nil) throws -> LaunchOptions {
        let roots = try roots(for: app, arch: arch)
        var launch = LaunchOptions(roots: roots.paths, arch: roots.arch, root: root)
        (launch.inserted, launch.signingPolicy) = (try insertedLibraries(), signingPolicy)
        return launch
    }

    /// Fails when `--root` is given but is not a directory.
    func checkRoot() throws(CommandFailure) {
        if let root, FileStatus.of(root)?.isDirectory != true {
            throw CommandFailure(what: "--root \(root)", why: FileStatus.of(root) == nil ? "no such directory" : "not a directory", kind: "bad-root")
        }
    }

    /// What a failure of a command on `app` can suggest.
    func failureContext(app: String?) -> CommandFailure.Context {
        CommandFailure.Context(app: app, root: root, cache: cache)
    }

    @Flag(help: "Refuse unsigned images (the arm64 rule; docs/code-signing.md). A closure records the policy it was built under.") var requireSignatures = false

    @Flag(help: "Refuse any image not signed with the main executable's team ID, platform binaries excepted (library validation; docs/code-signing.md).")
    var libraryValidation = false

    var closureCache: ClosureCache { ClosureCache.resolve(cache) }

    /// The signature policy `--require-signatures` and `--library-validation` ask for.
    var signingPolicy: SigningPolicy { SigningPolicy(requireSignatures: requireSignatures, libraryValidation: libraryValidation) }
}

/// `--fault-around N`, as launch, compare and bench take it.
struct FaultAroundOption: ParsableArguments {
    @Option(help: "Page-in: the pages one fault fills: the touched page and up to N-1 more of the same image that receive fixups (1: the touched page alone).")
    var faultAround = FixupPager.defaultFaultAround

    /// The pages one fault fills: the touched one at least.
    var pages: Int { max(1, faultAround) }
}

/// How far a command that uses closures trusts them: `--trust` and `--hash-images`.
struct TrustOptions: ParsableArguments {
    @Option(help: "Use only closures signed by the private half of this package key (dyld3 key generate, install --sign).") var trust: String?
    @Flag(help: "Hash every image's content on every use, even when stat says it is unchanged (see docs/security.md for the cost).") var hashImages = false

    /// The trust key, read from `--trust`; a key that cannot be read fails the command.
    func trustKey() throws -> ClosureTrustKey? {
        guard let trust else { return nil }
        return try CommandFailure.readKey(trust, option: "--trust", ClosureTrustKey.init(contentsOf:))
    }

    /// The dyld3 launch configuration these options ask for: their checks, and `dlopen`
    /// closures built at run time where the launch closure has none.
    func checks() throws -> LaunchConfiguration {
        LaunchConfiguration(alwaysHashContent: hashImages, trustKey: try trustKey(), dlopenClosures: Self.dlopenClosure)
    }

    /// A dlopen closure built at run time (``DlopenClosureBuilder/resolve``); for a launch bound
    /// into the shared cache, encoded and bound into it as `install --dlopen` binds one (a
    /// cache that cannot be bound into leaves its images to their files).
    static let dlopenClosure: LaunchConfiguration.DlopenBuilder = { path, request, launch, loaded, mapped, earlier, state throws(LoadError) in
        let resolution = try DlopenClosureBuilder.resolve(path, request: request, launch: launch, loaded: loaded, mapped: mapped, earlier: earlier, state: state)
        guard let cache = launch.sharedCache, case let .built(built) = resolution else { return resolution }
        let record = try built.encode()
        // The closure is checked against the images loaded so far, as `dlopen` will check it.
        var within = launch
        within.images = Array(built.images[..<built.firstAdded])
        guard let bound = try? SharedCacheBinding.bind(dlopen: record, launch: within, cachePath: cache.path, closurePath: cache.path) else { return resolution }
        return .closure(bound)
    }
}

/// Finds the images to launch inside what the user named.
enum AppLocator {
    /// `X.app` → its executable (`AppArchive.AppBundle`: Info.plist's `CFBundleExecutable`,
    /// else `X`, in `X.app/` or `X.app/Contents/MacOS/`); a directory holding
    /// `Payload/X.app` (an unpacked `.ipa`), or holding one `X.app` (`Payload` itself) →
    /// that bundle's; anything else is the image itself.
    static func mainImage(of app: String) throws -> String {
        guard let status = FileStatus.of(app) else { throw LoadError.unusable(path: app, reason: "no such file or directory") }
        guard status.isDirectory else { return app }
        guard !app.hasSuffix(".app") else { return try AppBundle.executable(of: app) }
        if FileStatus.of(app + "/Payload")?.isDirectory == true { return try AppBundle.executable(of: try AppBundle.payloadApp(in: app)) }
        return try AppBundle.executable(of: try AppBundle.singleApp(in: app))
    }

    /// An `.ipa` file unpacked into the cache's work area (`CACHE/.work/`), as its
    /// `Payload/X.app`; any other app as it is. The work area is trusted as the cache's
    /// closures are (``ClosureOwnership``).
    static func unpacked(_ app: String, cache: ClosureCache) throws -> String {
        guard app.hasSuffix(".ipa"), FileStatus.of(app)?.isDirectory == false else { return app }
        return try AppBundle.unpack(ipa: app, workArea: cache.directory + "/.work") { workArea, parent in
            ClosureOwnership.checkWorkArea(
                FileStatus(size: 0, mode: workArea.mode, ownerID: workArea.owner),
                cache: FileStatus(size: 0, mode: parent.mode, ownerID: parent.owner), cacheDirectory: cache.directory)
        }
    }

    /// Apps named on the command line, with directories of `.app` bundles expanded.
    static func expand(_ apps: [String]) throws -> [String] {
        try apps.flatMap { app in
            guard FileStatus.of(app)?.isDirectory == true, !app.hasSuffix(".app"), FileStatus.of(app + "/Payload") == nil else { return [app] }
            let bundles = try FileManager.default.contentsOfDirectory(atPath: app).filter { $0.hasSuffix(".app") }.sorted()
            guard !bundles.isEmpty else { throw LoadError.unusable(path: app, reason: "is a directory holding no .app bundle") }
            return bundles.map { app + "/" + $0 }
        }
    }

    /// The launch roots for an app (a bundle or dylib gets its host first: `LaunchRoots`)
    /// and the architecture.
    static func roots(for app: String, arch: String?, root: String?, host: String?) throws -> (paths: [String], arch: String) {
        let target = try mainImage(of: app)
        // Default: the host's architecture if the file has it, else its first slice's.
        let available = try arch.map { [$0] } ?? ImageFile.architectures(path: target)
        let architecture = arch ?? (available.contains(CodeRunner.hostArchitecture) ? CodeRunner.hostArchitecture : available[0])
        let fileType = try ImageFile.load(path: target, arch: architecture).image.header.fileType
        return (try LaunchRoots.roots(for: target, fileType: fileType, root: root, host: host), architecture)
    }
}
