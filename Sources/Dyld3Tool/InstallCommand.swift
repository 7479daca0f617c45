import ClosureBuild
import ArgumentParser
import Foundation
import LoaderCore
import MachOInspect
import ClosureFormat
import LaunchPlan
import SharedCacheBuild

/// `dyld3 install APP…`: builds launch closures out of process, one per app and arch.
struct InstallCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "install",
        abstract: "Build and cache launch closures for apps.",
        discussion: """
            APP is a .app directory, a directory of .app bundles, an executable, a dylib or a \
            bundle. Each gets one closure per architecture of its main image (only --arch's \
            when given) in the cache, written atomically. An app that cannot launch for an \
            architecture gets no closure for it, and the launch error.
            """)

    @Argument(help: "Apps to install.") var apps: [String]
    @OptionGroup var options: AppOptions
    @Flag(help: "Identify images by content only (no inode or mtime): for caches that travel between machines.") var contentOnly = false
    @Option(help: "Sign every closure with this private key (dyld3 key generate): launches with --trust accept only signed closures.") var sign: String?

    @Flag(help: "Also write a prelinked set beside each closure: the segments of all its images in one file, fixed up for one base (docs/prelinked.md).")
    var prelink = false

    @Flag(help: "Print one JSON document (docs/json.md): every closure written and every app that got none, with its error.") var json = false

    @Option(name: .customLong("shared-cache"), help: ArgumentHelp(
        "Bind the closure into a dyld shared cache (docs/shared-cache.md): auto (the root's cache for the arch, when it has one and it holds what the launch would write), none, or the cache's PATH.",
        valueName: "auto|none|PATH"))
    var sharedCache = "auto"

    @Option(name: .customLong("dlopen"), help: ArgumentHelp(
        "Also build the dlopen closure of PATH, as the app's code passes it to dlopen (@executable_path/..., @rpath/..., or a path under --root), or a file inside the app. Repeatable.",
        valueName: "PATH"))
    var dlopen: [String] = []

    func run() throws {
        let cache = options.closureCache
        let (targets, signer) = try CommandFailure.reporting(json: json) { () throws -> ([String], ClosureSigningKey?) in
            try options.checkRoot()
            let targets = try AppLocator.expand(apps)
            return (targets, try sign.map { (key) throws(CommandFailure) in
                try CommandFailure.readKey(key, option: "--sign", ClosureSigningKey.init(contentsOf:))
            })
        }
        if let problem = cache.checkTrust() { printError("dyld3: warning: launches will refuse closures in \(cache.directory): \(problem)") }
        try CommandFailure.reporting(json: json) { try cache.prepareForWriting() }
        // Progress goes to stderr, and only to a terminal; stdout keeps one line per closure.
        let progress = targets.count > 1 && isatty(2) != 0
        var failures: [(app: String, why: String)] = []
        var written: [JSONValue] = [], failed: [JSONValue] = []
        var attempted = 0
        for (number, app) in targets.enumerated() {
            if progress { printError("[\(number + 1)/\(targets.count)] \(app)") }
            // An app whose file does not read fails once, without an architecture.
            let architectures: [String?] = (try? options.architectures(of: app)) ?? [nil]
            for arch in architectures {
                attempted += 1
                do {
                    let request = try options.launchOptions(for: app, arch: arch)
                    var closure = try ClosureBuilder.build(roots: request.roots, inserted: request.inserted, arch: request.arch, root: options.root,
                                                           contentOnlyIdentity: contentOnly, policy: options.signingPolicy)
                    for path in dlopen {
                        let requested = Self.dlopenPath(path, executable: closure.images[0].path)
                        guard case let .closure(record) = try DlopenClosureBuilder.build(requested, request: request, launch: closure, loaded: closure.images) else {
                            printError("dyld3: \(app): --dlopen \(path): loaded at launch already, no dlopen closure needed")
                            continue
                        }
                        closure.dlopens.append(record)
                    }
                    let path = cache.closurePath(forApp: request.roots.last!, arch: request.arch)
                    var cachedImages = 0, cachePatches = 0
                    if let cachePath = SharedCacheOption.path(sharedCache, root: options.root, arch: request.arch) {
                        do {
                            (closure, cachedImages, cachePatches) = try SharedCacheBinding.bind(closure, cachePath: cachePath, closurePath: path)
                        } catch {
                            guard sharedCache == "auto" else { throw error }
                            printError("dyld3: \(app): shared cache \(error)")
                        }
                    }
                    var untrusted: String?
                    do throws(ClosureError) {
                        try ClosureFile.checkTrust(path)
                    } catch {
                        if case let .untrusted(_, what) = error { untrusted = what } else { untrusted = "\(error)" }
                    }
                    do {
                        try ClosureFile.write(closure, to: path, signedWith: signer)
                    } catch {
                        guard let untrusted else { throw error }
                        throw ClosureError.writeFailed(path: path, what: "cannot replace the untrusted closure there (\(untrusted)): \(error); "
                            + "launches refuse it; remove it as its owner or root, or use another --cache")
                    }
                    if let untrusted { printError("dyld3: \(path): replaced an untrusted closure (\(untrusted))") }
                    let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
                    let prelinked = prelink ? try PrelinkInstall.write(closure, closurePath: path, signedWith: signer) : nil
                    let line = "\(app) [\(request.arch)]: \(closure.images.count) images, \(closure.totalRebases) rebases, "
                        + "\(closure.totalBinds) binds" + (closure.dlopens.isEmpty ? "" : ", \(closure.dlopens.count) dlopen closures")
                        + (cachedImages == 0 ? "" : ", \(cachedImages) in the shared cache (\(cachePatches) patches)")
                        + " -> \(path) (\(size) bytes)"
                    if json {
                        written.append(.object([
                            ("app", .string(app)), ("arch", .string(request.arch)), ("images", .int(Int64(closure.images.count))),
                            ("rebases", .int(Int64(closure.totalRebases))), ("binds", .int(Int64(closure.totalBinds))),
                            ("closure", .string(path)), ("closure_bytes", .int(Int64(size))),
                            ("dlopen_closures", .array(closure.dlopens.map { .string($0.requested) })),
                            ("shared_cache", closure.sharedCache.map { .string($0.path) } ?? .null), ("images_in_shared_cache", .int(Int64(cachedImages))), ("shared_cache_patches", .int(Int64(cachePatches))),
                        ] + (prelinked?.json ?? [])))
                    } else {
                        print(line)
                        if let prelinked { print(prelinked.line) }
                    }
                } catch {
                    let failure = CommandFailure(error, context: options.failureContext(app: app))
                    let named = architectures.count > 1 ? "\(app) [\(arch ?? "?")]" : app
                    failures.append((named, failure.description))
                    failed.append(.object([("app", .string(app)), ("arch", arch.map(JSONValue.string) ?? .null), ("error", failure.errorObject)]))
                    printError("dyld3: \(named): no closure: \(failure.description)")
                }
            }
        }
        if json {
            print(JSONValue.object([
                ("schema_version", .int(JSONValue.schemaVersion)),
                ("installed", .int(Int64(written.count))), ("failed", .int(Int64(failed.count))),
                ("closures", .array(written)), ("failures", .array(failed)),
            ]).serialized())
        } else if attempted > 1 {
            // `installed N, failed M`, then each failed app with its reason.
            print("installed \(attempted - failures.count), failed \(failures.count)"
                + (failures.isEmpty ? "" : ": " + failures.map { "\($0.app) (\($0.why))" }.joined(separator: "; ")))
        }
        if !failures.isEmpty { throw ExitCode(1) }
    }

    /// A `--dlopen` argument as the app's code would pass it: a file inside the main
    /// executable's directory becomes `@executable_path/...`; anything else is kept.
    static func dlopenPath(_ argument: String, executable: String) -> String {
        guard !argument.hasPrefix("@"), FileManager.default.fileExists(atPath: argument) else { return argument }
        let file = PathResolver.normalize(argument)
        let directory = PathResolver.directory(of: executable)
        guard file.hasPrefix(directory + "/") else { return argument }
        return "@executable_path" + file.dropFirst(directory.count)
    }
}
