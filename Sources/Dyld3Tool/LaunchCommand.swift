import ClosureBuild
import ArgumentParser
import Dyld2
import Dyld3
import ClosureCache
import Foundation
import LoaderCore
import MachOInspect
import ClosureFormat
import LaunchPlan
import LoaderSystem
import MachOReader

/// `dyld3 launch APP`: load, fix up and run a Mach-O app inside this process.
struct LaunchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "launch",
        abstract: "Load, fix up and run a Mach-O app in this process.",
        discussion: """
            APP is an executable, a .app directory, a dylib or a bundle. A dylib or bundle is \
            loaded into its host executable (--host, else ROOT/bin/host) as dlopen loads it, like \
            a Python extension module (its initializers run, there is no main); without a host it \
            is loaded alone as the root image. x86_64 code runs on this x86_64 host; other \
            architectures, and graphs holding an image from a stub root, stop after fixups.
            """)

    @Argument(help: "The app: an executable, a .app directory, a dylib or a bundle.") var app: String
    @OptionGroup var options: AppOptions
    @OptionGroup var trust: TrustOptions

    @Option(help: "dyld3: apply the cached closure; dyld2: the slow path (parse, resolve, look up on every launch); prelinked: the app's prelinked set (install --prelink); auto: the prelinked set when there is one and it is fresh (not with --trust), else dyld3 when a valid closure exists, else dyld2.")
    var mode: LaunchMode = .auto

    @Flag(help: "After a fallback to dyld2, write a fresh closure (signed with --sign; under --trust, or over a signed closure, only then).")
    var rebuild = false

    @Option(help: "With --rebuild: sign the fresh closure with this private key (the private half of the --trust key).") var sign: String?
    @Option(help: "Force the main image's slide (hex with 0x, or decimal; page-aligned).") var slide: String?

    @Flag(help: "prelinked: slide the set at this launch, to a new random address, instead of mapping its copy slid for this boot (docs/prelinked.md).")
    var slidePerLaunch = false

    @Flag(help: "Stop after fixups: run no initializer and no main.") var noRun = false

    @Option(name: .customLong("shared-cache"), help: ArgumentHelp(
        "dyld2: take the dylibs a dyld shared cache holds from it (docs/shared-cache.md): auto (the root's cache for the arch, when it has one and it can be used; else the files), none, or the cache's PATH. dyld3 uses the cache its closure was bound into.",
        valueName: "auto|none|PATH"))
    var sharedCache = "auto"

    @Option(help: "dyld3: eager writes every fixup at launch; page-in writes each page's fixups when it is first touched (userfaultfd; eager where unavailable, with the reason in --json).")
    var fixups: FixupsMode = .eager

    @Flag(help: "dyld3: verify every mapped page of each signed image against its code signature before the fixups (docs/code-signing.md).")
    var verifyPages = false

    @OptionGroup var faultAround: FaultAroundOption

    @Flag(help: "Print where the time before main went (each phase and its share), images, fixups, and for dyld3 the closure's size and whether identities were hashed; --json carries the same under \"stats\".")
    var stats = false

    @Option(name: .customLong("repeat"), help: ArgumentHelp(
        "Launch N times in this process and print, after the last launch's report, the median, minimum and maximum of the pre-main and total times (--json: \"repeat\").",
        valueName: "N"))
    var repeatCount = 1

    @Flag(help: "Print the launch report as JSON.") var json = false

    @Flag(help: "After the (last) launch, print `held PID` and keep its memory mapped until stdin ends: for measuring what launches share (smaps).")
    var hold = false

    enum LaunchMode: String, ExpressibleByArgument, CaseIterable {
        case dyld2, dyld3, auto, prelinked
    }

    func run() throws {
        try CommandFailure.reporting(json: json, context: options.failureContext(app: app)) { try launch() }
    }

    func validate() throws {
        guard repeatCount >= 1 else { throw ValidationError("--repeat \(repeatCount): give 1 or more launches") }
    }

    func launch() throws {
        let request = try launchOptions()
        let checks = try trust.checks()
        let signer = try signingKey(trusting: checks.trustKey)
        let path = options.closureCache.closurePath(forApp: request.roots.last!, arch: request.arch)
        var samples: [(preMain: Int64, total: Int64)] = []
        var anyFallback = false
        for number in 1...repeatCount {
            let outcome = try launchOnce(request, checks: checks, closurePath: path, quiet: number > 1)
            let launch = outcome.launch
            defer { launch.memory.release() }
            if let refusal = launch.report.sharedCacheRefusal, !json, number == 1 {
                printError("dyld3: shared cache not used (\(refusal)); dyld2 loads its dylibs from their files")
            }
            anyFallback = anyFallback || outcome.fallback != nil
            let statistics = LaunchStatistics(launch.report, closurePath: nil)
            samples.append((statistics.preMainNanoseconds, launch.report.timings[.total] ?? 0))
            guard number == repeatCount else { continue }
            let repeated = repeatCount > 1 ? LaunchRepeat(samples: samples) : nil
            print(LaunchOutput.render(launch.report, json: json, stats: stats, closure: outcome.closurePath, fallback: outcome.fallback,
                                      setFallback: outcome.setFallback, repeated: repeated), terminator: "")
            // The dlopen closures this launch built, kept for the next one (as dyld3 kept them).
            if launch.report.mode == "dyld3", let used = outcome.closurePath { DlopenClosureKeeping.keep(launch, closurePath: used) }
            if hold {
                print("held \(getpid())")
                _ = fflush(nil)  // what `print` buffered reaches the pipe now
                while readLine() != nil {}
            }
        }
        if rebuild, anyFallback { writeFreshClosure(request, to: path, signedWith: signer, trusting: checks.trustKey) }
    }

    /// One launch as `--mode` asks: the prelinked set, the closure or the slow path, the
    /// first that is used; with why each one before it was not. `quiet`: the refusals are
    /// not told on stderr again (a repeated launch).
    func launchOnce(_ request: LaunchOptions, checks: LaunchConfiguration, closurePath path: String, quiet: Bool) throws
        -> (launch: Launch, closurePath: String?, fallback: ClosureError?, setFallback: ClosureError?) {
        var closurePath: String?
        var fallback: ClosureError?, setFallback: ClosureError?
        var launch: Launch?
        let setPath = ClosureCache.prelinkedSetPath(forClosure: path)
        // Trusting a key, a set's launch hashes all its data (docs/prelinked.md, "Signed
        // sets"): `auto` then takes the closure, which checks its images by status.
        if mode == .prelinked || (mode == .auto && checks.trustKey == nil && FileStatus.of(setPath) != nil) {
            launch = try attempt(.prelinked, "prelinked set not used", then: "trying the closure", quiet: quiet) {
                try PrelinkedLaunch.launch(setPath: setPath, request: request, configuration: checks)
            } refused: { setFallback = $0 }
            if launch != nil { closurePath = setPath }
        }
        if launch == nil, mode == .dyld3 || mode == .auto {
            launch = try attempt(.dyld3, "closure not used", then: "launching with dyld2", quiet: quiet) {
                try FastPath.launch(closurePath: path, request: request, configuration: checks)
            } refused: { fallback = $0 }
            if launch != nil { closurePath = path }
        }
        return (try launch ?? SlowPath.launch(request), closurePath, fallback, setFallback)
    }

    /// A launch from a closure or a set; when it is refused, the failure is the command's
    /// if `--mode` asked for `forced`, else `refused` hears of it, stderr says `notUsed`
    /// and what comes `then`, and the launch is nil.
    func attempt(
        _ forced: LaunchMode, _ notUsed: String, then: String, quiet: Bool = false, _ body: () throws -> Launch,
        refused: (ClosureError) -> Void = { _ in }
    ) throws -> Launch? {
        do {
            return try body()
        } catch let error as ClosureError {
            if mode == forced {
                let failure = CommandFailure(error, context: options.failureContext(app: app))
                throw CommandFailure(what: "--mode \(forced.rawValue)", why: "\(failure.what): \(failure.why)", fix: failure.fix, kind: failure.kind)
            }
            refused(error)
            if !json, !quiet { printError("dyld3: \(notUsed) (\(error)); \(then)") }
            return nil
        }
    }

    /// The `--sign` key, read (a key that cannot be read, or one that is not the private
    /// half of the `--trust` key, fails the launch); nil without `--sign`.
    func signingKey(trusting trustKey: ClosureTrustKey?) throws -> ClosureSigningKey? {
        guard let sign else { return nil }
        guard rebuild else { throw ValidationError("--sign is for --rebuild") }
        let signer = try CommandFailure.readKey(sign, option: "--sign", ClosureSigningKey.init(contentsOf:))
        if let trustKey, signer.trustKey != trustKey {
            throw CommandFailure(what: "--sign \(sign)", why: "not the private half of the --trust key: the closure it signs would be refused", kind: "key")
        }
        return signer
    }

    /// `--rebuild` after a dyld2 fallback: a closure that cannot be written (the cache is
    /// not writable, the app changed) costs a warning, never the launch's result. An
    /// unsigned closure is never written under `--trust` (every later `--trust` launch would
    /// refuse it) or over a signed one (a downgrade): without `--sign`, it says so instead.
    func writeFreshClosure(_ request: LaunchOptions, to path: String, signedWith signer: ClosureSigningKey?, trusting trustKey: ClosureTrustKey?) {
        if signer == nil, trustKey != nil || ClosureFile.isSigned(path) {
            let why = trustKey != nil ? "--trust uses only signed closures" : "the closure there is signed"
            printError("dyld3: warning: --rebuild: no closure written to \(path): \(why), and without --sign "
                + "it would be unsigned; give --sign KEY (the private half of the trust key), or rebuild with `dyld3 install --sign KEY`")
            return
        }
        do {
            let closure = try ClosureBuilder.build(roots: request.roots, inserted: request.inserted, arch: request.arch, root: options.root,
                                                   policy: request.signingPolicy)
            try options.closureCache.prepareForWriting()
            try ClosureFile.write(closure, to: path, signedWith: signer)
            if !json { printError("dyld3: wrote a fresh closure to \(path)") }
        } catch {
            printError("dyld3: warning: --rebuild: no closure written to \(path): \(error)")
        }
    }

    func launchOptions() throws -> LaunchOptions {
        var launchOptions = try options.launchOptions(for: app)
        if let slide {
            let value = slide.hasPrefix("0x") ? UInt64(slide.dropFirst(2), radix: 16) : UInt64(slide)
            guard let value else { throw ValidationError("--slide \(slide) is not a number") }
            launchOptions.slide = value
        }
        (launchOptions.run, launchOptions.fixups) = (!noRun, fixups)
        (launchOptions.faultAround, launchOptions.verifyPages, launchOptions.slidePerLaunch) = (faultAround.pages, verifyPages, slidePerLaunch)
        launchOptions.sharedCache = SharedCacheOption.request(sharedCache, root: options.root, arch: launchOptions.arch,
                                                              closureDirectory: options.closureCache.directory)
        // The cache's copy slid for the boot is kept with the closures: a first launch makes
        // the directory (unusable, the launch says why and loads the files).
        if launchOptions.sharedCache != nil { try? options.closureCache.prepareForWriting() }
        return launchOptions
    }
}

extension FixupsMode: ExpressibleByArgument {}

/// The text and JSON views of a launch report.
enum LaunchOutput {
    /// `fallback`: why the closure was not used; `setFallback`: why the prelinked set was not.
    /// `repeated`: the times of every launch of `--repeat`, the last of which is `report`.
    static func render(_ report: LaunchReport, json: Bool, stats: Bool, closure: String?, fallback: ClosureError?,
                       setFallback: ClosureError? = nil, repeated: LaunchRepeat? = nil) -> String {
        if json {
            var object = jsonObject(report, closure: closure, fallback: fallback, setFallback: setFallback)
            if let repeated, case let .object(members) = object { object = .object(members + [("repeat", repeated.json)]) }
            return object.serialized() + "\n"
        }
        var out = "path: " + pathDescription(report, closure: closure, fallback: fallback, setFallback: setFallback) + "\n"
        if report.ran, let result = report.result {
            out += "main returned \(result)\n"
        } else {
            out += "loaded and fixed up \(report.images.count) images; not run: \(report.notRun.map(String.init(describing:)) ?? "?")\n"
        }
        if stats {
            out += LaunchStatistics(report, closurePath: closure).text
            out += "  slide:                 \(hex(report.slide))\n"
            if let setFallback { out += "  prelinked set not used: \(setFallback)\n" }
            if let fallback { out += "  closure not used:      \(fallback)\n" }
        }
        if let repeated { out += repeated.text }
        return out
    }

    /// The loader path that ran, with what it ran from: `dyld3, closure PATH`, `prelinked,
    /// set PATH (…)`, or `dyld2, the slow path` (with why the closure was not used).
    static func pathDescription(_ report: LaunchReport, closure: String?, fallback: ClosureError?, setFallback: ClosureError?) -> String {
        switch report.mode {
        case "dyld3":
            return "dyld3, closure \(closure ?? "?")" + (setFallback.map { " (prelinked set not used: \($0.kind))" } ?? "")
        case "prelinked":
            return "prelinked, set \(closure ?? "?") (" + (report.slidForBoot ? "its copy slid for this boot" : "slid at launch") + ")"
        default:
            let refused = fallback.map { " (closure not used: \($0.kind))" } ?? setFallback.map { " (prelinked set not used: \($0.kind))" } ?? ""
            let cached = report.sharedCache.map { ", \($0.images) dylibs from the shared cache" } ?? ""
            return "\(report.mode), the slow path" + refused + cached
        }
    }

    static func jsonObject(_ report: LaunchReport, closure: String?, fallback: ClosureError?, setFallback: ClosureError? = nil) -> JSONValue {
        let timings = LaunchReport.Phase.allCases.compactMap { phase in report.timings[phase].map { (phase.rawValue, JSONValue.int($0)) } }
        let digest: JSONValue = report.digest.map { .string(hex($0)) } ?? .null
        let fallbackReason: JSONValue = report.pageInFallback.map { .string("\($0)") } ?? .null
        let slideReason: JSONValue = report.slideAtLaunch.map { .string("\($0)") } ?? .null
        let slidForBoot: JSONValue = LaunchStatistics.slidForBoot(report).map(JSONValue.bool) ?? .null
        let cacheRefusal: JSONValue = report.sharedCacheRefusal.map(JSONValue.string) ?? .null
        return .object([
            ("schema_version", .int(JSONValue.schemaVersion)), ("mode", .string(report.mode)),
            ("images", .array(report.images.map(JSONValue.string))), ("rebases", .int(Int64(report.rebases))),
            ("binds", .int(Int64(report.binds))), ("symbol_lookups", .int(Int64(report.symbolLookups))),
            ("slide", .uint(report.slide)), ("timings_ns", .object(timings)), ("ran", .bool(report.ran)),
            ("result", report.result.map { .int(Int64($0)) } ?? .null),
            ("not_run_reason", report.notRun.map { .string("\($0)") } ?? .null),
            ("initializers", .array(report.initializers.map(JSONValue.string))),
            ("digest", digest), ("fixups_mode", .string(report.fixupsMode.rawValue)),
            ("fixups_fallback_reason", fallbackReason), ("page_in", pageIn(report)),
            ("slid_for_boot", slidForBoot), ("slid_set_written", .bool(report.slidSetWritten)),
            ("slide_at_launch_reason", slideReason), ("closure", closure.map(JSONValue.string) ?? .null),
            ("prelinked_fallback_reason", setFallback.map { .string("\($0.kind): \($0)") } ?? .null),
            ("fallback_reason", fallback.map { .string("\($0.kind): \($0)") } ?? .null),
            ("shared_cache_refusal", cacheRefusal),
            ("stats", LaunchStatistics(report, closurePath: closure).json),
        ])
    }

    /// A page-in launch's figures: pages indexed, bytes registered, pages filled by the time
    /// the launch returned.
    static func pageIn(_ report: LaunchReport) -> JSONValue {
        guard report.fixupsMode == .pageIn else { return .null }
        return .object([("fixup_pages", .int(Int64(report.fixupPages))), ("registered_bytes", .uint(report.registeredBytes)),
                        ("pages_filled", .int(Int64(report.pagesFilled)))])
    }
}

/// `launch --repeat N`: the pre-main and total times of N launches in one process, as
/// their median and spread (one launch on a busy machine can take several times another).
struct LaunchRepeat {
    /// Each launch's pre-main time (its total less `main`) and total, in launch order.
    let samples: [(preMain: Int64, total: Int64)]

    /// The median (the mean of the middle two for an even count), minimum and maximum.
    static func spread(_ values: [Int64]) -> (median: Int64, min: Int64, max: Int64) {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return (0, 0, 0) }
        let middle = sorted.count / 2
        let median = sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
        return (median, sorted[0], sorted[sorted.count - 1])
    }

    var text: String {
        func line(_ name: String, _ values: [Int64]) -> String {
            let (median, low, high) = Self.spread(values)
            func ms(_ nanoseconds: Int64) -> String { String(format: "%.3f ms", Double(nanoseconds) / 1e6) }
            return "  \(name) median \(ms(median)), min \(ms(low)), max \(ms(high))"
                + (low > 0 ? String(format: " (max/min %.2f)", Double(high) / Double(low)) : "") + "\n"
        }
        return "repeat: \(samples.count) launches in this process\n" + line("pre-main:", samples.map(\.preMain))
            + line("total:   ", samples.map(\.total))
    }

    var json: JSONValue {
        func object(_ values: [Int64]) -> JSONValue {
            let (median, low, high) = Self.spread(values)
            return .object([("median", .int(median)), ("min", .int(low)), ("max", .int(high)), ("samples", .array(values.map(JSONValue.int)))])
        }
        return .object([("launches", .int(Int64(samples.count))), ("pre_main_ns", object(samples.map(\.preMain))),
                        ("total_ns", object(samples.map(\.total)))])
    }
}
