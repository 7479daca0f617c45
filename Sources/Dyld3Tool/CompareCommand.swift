import LaunchComparison
import ClosureBuild
import ArgumentParser
import Foundation
import ClosureCache
import LoaderCore
import MachOInspect
import ClosureFormat
import LaunchPlan
import LoaderSystem
import MachOReader

/// `dyld3 compare APP`: launches through both paths at the same slide and proves they agree.
struct CompareCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compare",
        abstract: "Launch an app through dyld2 and dyld3 at the same slide and compare memory, fixups, initializers and result.",
        discussion: "Uses the cached closure when it is valid, else builds one in memory. Any difference exits non-zero.")

    @Argument(help: "The app: an executable, a .app directory, a dylib or a bundle.") var app: String
    @OptionGroup var options: AppOptions
    @OptionGroup var trust: TrustOptions

    @Option(name: .customLong("dlopen"), help: ArgumentHelp(
        "After each launch, dlopen PATH as the app's code would (@executable_path/..., @rpath/..., a path under --root, or a file inside the app) and compare the images it adds too. Repeatable, in order.",
        valueName: "PATH"))
    var dlopen: [String] = []

    @Flag(help: "Compare dyld2 with the launch of the app's prelinked set (install --prelink) instead of its closure.") var prelinked = false
    @Flag(help: "With --prelinked: slide the set at the launch instead of mapping its copy slid for this boot.") var slidePerLaunch = false

    @Option(name: .customLong("shared-cache"), help: ArgumentHelp(
        "The dyld2 side takes the dylibs a dyld shared cache holds from it: auto (the root's cache for the arch), none (the default: every image from its file, the reference), or the cache's PATH; a cache that cannot be used fails the comparison.",
        valueName: "auto|none|PATH"))
    var sharedCache = "none"

    @Flag(help: "Print the comparison as JSON.") var json = false

    @Option(help: "How the dyld3 launch writes fixups: eager, or page-in (each page on first touch; the comparison touches every page).")
    var fixups: FixupsMode = .eager

    @OptionGroup var faultAround: FaultAroundOption

    func run() throws {
        try CommandFailure.reporting(json: json, context: options.failureContext(app: app)) { try compare() }
    }

    func compare() throws {
        var launchOptions = try options.launchOptions(for: app)
        (launchOptions.fixups, launchOptions.faultAround, launchOptions.slidePerLaunch) = (fixups, faultAround.pages, slidePerLaunch)
        launchOptions.sharedCache = SharedCacheOption.request(sharedCache, root: options.root, arch: launchOptions.arch,
                                                              closureDirectory: options.closureCache.directory)
        launchOptions.sharedCache?.required = true
        let cachedPath = options.closureCache.closurePath(forApp: launchOptions.roots.last!, arch: launchOptions.arch)
        var closureSource = cachedPath
        let closure: LaunchClosure
        let request = ClosureBinding(request: launchOptions.roots, inserted: launchOptions.inserted, arch: launchOptions.arch, root: options.root,
                                     policy: options.signingPolicy)
        let checks = try trust.checks()
        if let cached = try? ClosureFile.read(cachedPath, trusting: checks.trustKey), cached.binding.mismatch(with: request) == nil,
           cached.staleImage(closurePath: cachedPath) == nil {
            closure = cached
        } else {
            closure = try ClosureBuilder.build(roots: launchOptions.roots, inserted: launchOptions.inserted, arch: launchOptions.arch, root: options.root,
                                               policy: options.signingPolicy)
            closureSource = "(built in memory)"
        }
        var setPath: String?
        if prelinked {
            setPath = ClosureCache.prelinkedSetPath(forClosure: cachedPath)
            guard FileStatus.of(setPath!) != nil else {
                throw CommandFailure(what: setPath!, why: "no prelinked set", fix: "run `dyld3 install \(app) --prelink` (with the same --root and --cache)",
                                     kind: "missing")
            }
            closureSource = setPath!
        }
        let opened = dlopen.map { InstallCommand.dlopenPath($0, executable: closure.images[0].path) }
        let comparison = try LaunchComparison.run(options: launchOptions, closure: closure, closurePath: closureSource, configuration: checks,
                                                  prelinkedSet: setPath, dlopen: opened)
        if json {
            print(JSONValue.object([
                ("schema_version", .int(JSONValue.schemaVersion)), ("app", .string(app)), ("arch", .string(launchOptions.arch)),
                ("closure", .string(closureSource)), ("slide", .uint(comparison.slide)), ("images", .int(Int64(comparison.images))),
                ("bytes_compared", .int(Int64(comparison.bytesCompared))), ("fixups_compared", .int(Int64(comparison.fixupsCompared))),
                ("fixups_written", .int(Int64(comparison.fixupsWritten))),
                ("initializers", .array(comparison.initializers.map(JSONValue.string))),
                ("dlopen", .array(comparison.dlopens.map { load in
                    .object([("requested", .string(load.requested)), ("via", .string(load.via)), ("loaded", .array(load.loaded.map(JSONValue.string)))])
                })),
                ("dyld2_result", comparison.dyld2Result.map { .int(Int64($0)) } ?? .null),
                ("dyld3_result", comparison.dyld3Result.map { .int(Int64($0)) } ?? .null),
                ("not_run_reason", comparison.notRun.map { .string("\($0)") } ?? .null), ("fixups_mode", .string(comparison.fixupsMode.rawValue)),
                ("fixups_fallback_reason", comparison.pageInFallback.map { .string("\($0)") } ?? .null),
                ("pages_registered", .int(Int64(comparison.pagesRegistered))), ("pages_filled", .int(Int64(comparison.pagesFilled))),
                ("slid_for_boot", prelinked ? .bool(comparison.slidForBoot) : .null),
                ("slide_at_launch_reason", comparison.slideAtLaunch.map { .string("\($0)") } ?? .null),
                ("identical", .bool(comparison.differences.isEmpty)),
                ("differences", .array(comparison.differences.map { .string($0.description) })),
            ]).serialized())
        } else {
            for difference in comparison.differences { print("DIFFERS \(difference)") }
            let result = comparison.dyld2Result.map { ", main returned \($0) both ways" }
                ?? comparison.notRun.map { "; not run: \($0)" } ?? ""
            print("\(app) [\(launchOptions.arch)]: \(comparison.differences.isEmpty ? "identical" : "\(comparison.differences.count) differences"): "
                  + "\(comparison.images) images, \(comparison.bytesCompared) writable bytes, \(comparison.fixupsCompared) fixup locations (of \(comparison.fixupsWritten) fixups written), "
                  + "slide \(hex(comparison.slide))"
                  + (comparison.dlopens.isEmpty ? "" : "; after dlopen of " + comparison.dlopens.map { "\($0.requested) (\($0.loaded.count) images by \($0.via))" }.joined(separator: ", "))
                  + "\(comparison.differences.isEmpty ? result : "")"
                  + (comparison.fixupsMode == .pageIn ? "; page-in: \(comparison.pagesFilled) of \(comparison.pagesRegistered) pages filled on touch" : "")
                  + (comparison.pageInFallback.map { "; page-in fell back to eager: \($0)" } ?? "")
                  + (prelinked ? (comparison.slidForBoot ? "; the set's copy slid for this boot" : "; the set slid at launch (\(comparison.slideAtLaunch.map(String.init(describing:)) ?? "?"))") : ""))
        }
        if !comparison.differences.isEmpty { throw ExitCode(1) }
    }
}
