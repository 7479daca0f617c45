import ArgumentParser
import Foundation
import LaunchBench
import LaunchPlan
import LoaderCore
import ClosureCache
import StubRoot

/// `dyld3 bench`: dyld2 vs dyld3 vs the mapping floor vs glibc's loader on generated apps.
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Benchmark dyld2, dyld3, the mapping floor and glibc's dlopen on generated apps of each size.",
        discussion: """
            Generates (once, under build/bench-apps/) the apps of tools/gen-app --seed 1 and their \
            ELF twins, then for each size measures, interleaved in one process: a dyld2 launch, a dyld3 \
            launch, the mapping floor (map every segment, write each fixup page once) and glibc's \
            dlopen(RTLD_NOW) of the ELF twin in its two layouts (a directory per framework; one \
            directory); with --cold, each again with the page cache emptied before every sample; then \
            each as a fresh process; and the closure's build time and size. No path runs code. Writes \
            bench.json, bench.md and two SVG charts. With --objc-classes the Mach-O apps have \
            Objective-C (cached apart), the report gives the ObjC step's share of dyld2's and dyld3's \
            launch, and glibc keeps the C-only twin.
            """)

    @Argument(help: "An app to measure (anything `launch` takes: .app, .ipa, executable): every path this project launches it by, its phases, its heaviest images and its initializers. Without it, the generated apps of --dylibs are measured.")
    var app: String?

    @Option(help: "APP: the system root (default: a stub root made for the bench, said so in the report).") var root: String?
    @Option(help: "APP: a report of an earlier `bench APP --json` run: exit 6 when a count or warm median grew past --tolerance.") var baseline: String?
    @Option(help: "APP with --baseline: the growth allowed, as a fraction (0.25: 25%).") var tolerance = 0.25
    @Option(help: "Comma-separated dylib counts.") var dylibs = "1,10,100,400,1000"
    @Option(help: "Samples per path and size.") var runs = 11
    @Option(help: "Output directory. The committed bench/results are refreshed by `make bench` alone.") var out = "build/bench/results"
    @Option(help: "Architecture of the Mach-O apps (APP: default the host's if the file has it, else its first slice).") var arch: String?
    @Option(help: "Fixup style of the Mach-O apps: chained or opcodes.") var style = "chained"
    @Flag(help: "Skip the fresh-process measurements.") var noFresh = false
    @Flag(help: "Also measure cold launches: the page cache emptied of the path's files before each sample.") var cold = false

    @Option(help: "eager: dyld3 as usual; page-in: also measure page-in linking beside it (launch to main, touching 10/50/100% of the fixup pages, private pages).")
    var fixups: FixupsMode = .eager

    @OptionGroup var faultAround: FaultAroundOption
    @Option(help: "Objective-C classes per framework (tools/gen-app --objc-classes); 0: the C-only apps.") var objcClasses = 0
    @Option(help: "Objective-C categories per image (needs --objc-classes).") var objcCategories = 0
    @Option(help: "Objective-C selector references (message sends) per image (needs --objc-classes).") var objcSelrefs = 0

    @Option(help: "How --cold empties the page cache: drop_caches (root) or posix_fadvise; default: drop_caches when writable, else posix_fadvise.")
    var evict: EvictionMethod?

    @Flag(help: "Measure prelinked sets instead (docs/prelinked.md): the per-image floor, dyld3, the prelinked launch eager and page-in, and the set's own floor; writes prelinked.json and prelinked.md.")
    var prelinked = false

    @Flag(name: .customLong("shared-cache"), help: "Measure the dyld shared cache instead (docs/shared-cache.md): an app of 10 own frameworks over each --dylibs count of system frameworks, dyld2 and dyld3 from the files, dyld3 from the cache, the per-image and the cache's floors; writes shared-cache.json and shared-cache.md.")
    var sharedCache = false

    @Flag(help: "Measure small apps and dlopen instead: the launch of apps of 3 and 10 images, and the dlopen of a plugin adding 2 and 50 images (dyld2; dyld3 through a dlopen closure install built, and through one built at run time), in this process and in fresh processes; writes dlopen.json and dlopen.md.")
    var dlopen = false

    @Flag(help: "Print bench.json on stdout instead of the Markdown report (the files are written all the same).") var json = false

    func validate() throws {
        guard evict == nil || cold else { throw ValidationError("--evict needs --cold") }
        guard runs > 0 else { throw ValidationError("--runs must be positive") }
        guard ["chained", "opcodes"].contains(style) else { throw ValidationError("--style must be chained or opcodes") }
        guard min(objcClasses, objcCategories, objcSelrefs) >= 0 else { throw ValidationError("--objc-* counts must not be negative") }
        guard objcClasses > 0 || (objcCategories == 0 && objcSelrefs == 0) else { throw ValidationError("--objc-categories and --objc-selrefs need --objc-classes") }
        guard !counts.isEmpty, counts.allSatisfy({ $0 > 0 }) else { throw ValidationError("--dylibs must list positive counts") }
    }

    var counts: [Int] { dylibs.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) } }

    func run() async throws {
        try await CommandFailure.reporting(json: json) {
            if let app { return try await benchApp(app) }
            let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
            guard let repository = BenchConfiguration.findRepositoryRoot(from: FileManager.default.currentDirectoryPath)
                    ?? BenchConfiguration.findRepositoryRoot(from: executable) else {
                throw CommandFailure(what: "bench", why: "tools/gen-app not found above the current directory or the executable",
                                     fix: "run dyld3 bench inside the repository", kind: "no-repository")
            }
            var configuration = BenchConfiguration(
                dylibCounts: counts, runs: runs, arch: arch ?? "x86_64", style: style,
                repositoryRoot: repository, toolPath: noFresh ? nil : executable, cold: cold, eviction: evict)
            configuration.pageIn = fixups == .pageIn
            configuration.faultAround = faultAround.pages
            if objcClasses > 0 { configuration.objc = ObjCShape(classes: objcClasses, categories: objcCategories, selectorReferences: objcSelrefs) }
            let log: (String) -> Void = printError
            // Real-time priority only where the bench measures: what it starts runs at normal priority.
            if let (policy, refused) = UnsafeSchedulingPolicy.startChildrenAtNormalPriority() {
                log("running at \(policy): launches in this process are timed at it; the processes it starts (gen-app, cc, "
                    + "the glibc harness, fresh launches) run at SCHED_OTHER"
                    + (refused.isEmpty ? "" : " (\(refused.count) threads refused SCHED_RESET_ON_FORK: their children would not)"))
            }
            if sharedCache {
                let report = try await SharedCacheBench.run(configuration, log: log)
                return try write(name: "shared-cache", report, markdown: SharedCacheBench.markdown(report))
            }
            if dlopen {
                let report = try await DlopenBench.run(configuration, log: log)
                return try write(name: "dlopen", report, markdown: DlopenBench.markdown(report))
            }
            if prelinked {
                let report = try await PrelinkBench.run(configuration, log: log)
                return try write(name: "prelinked", report, markdown: PrelinkBench.markdown(report))
            }
            let report = try await LaunchBench.run(configuration, log: log)
            try LaunchBench.write(report, to: out)
            // Written unbuffered, so the stderr line after it cannot land inside a table.
            FileHandle.standardOutput.write(try Data(contentsOf: URL(fileURLWithPath: out + (json ? "/bench.json" : "/bench.md"))))
            log("wrote \(LaunchBench.outputFiles(report).map { out + "/" + $0 }.joined(separator: ", "))")
        }
    }
}

extension EvictionMethod: ExpressibleByArgument {}

extension BenchCommand {
    /// Writes `report` as NAME.json (``LaunchBench/encoder``) and `markdown` as NAME.md into
    /// `--out`, and prints one of them (`--json`: the JSON).
    func write(name: String, _ report: some Encodable, markdown: String) throws {
        let document = try LaunchBench.encoder.encode(report) + Data("\n".utf8)
        try LaunchBench.write(["\(name).json": document, "\(name).md": Data(markdown.utf8)], to: out)
        FileHandle.standardOutput.write(json ? document : Data(markdown.utf8))
    }

    /// `bench APP`: every path for one app, in a work area of the closure cache
    /// (`CACHE/app-bench`), against a stub root made there when no `--root` is given.
    func benchApp(_ app: String) async throws {
        let log: (String) -> Void = printError
        let closures = ClosureCache.resolve(nil)
        let work = closures.directory + "/app-bench"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let unpacked = try AppLocator.unpacked(app, cache: closures)
        var notes: [String] = []
        var systemRoot = root
        if systemRoot == nil {
            let stub = work + "/stub-root"
            try? FileManager.default.removeItem(atPath: stub)
            let plan = try StubRootPlan(binaries: [try AppLocator.mainImage(of: unpacked)], arches: arch.map { [$0] }, root: stub)
            try await plan.write()
            notes.append("root: a stub root made for the bench (\(stub)): the system libraries are stubs that export what the app imports, "
                + "so their own mapping and fixups are not the real system's; pass --root for a real one")
            notes += (plan.missingDylibs.map(\.description) + plan.unresolved.map(\.description)).map { "stub root: \($0)" }
            systemRoot = stub
        }
        let roots = try AppLocator.roots(for: unpacked, arch: arch, root: systemRoot, host: nil)
        let options = LaunchOptions(roots: roots.paths, arch: roots.arch, root: systemRoot, run: false)
        let eviction = cold ? try EvictionMethod.choose(requested: evict) : nil
        // Real-time priority only where the bench measures: what it starts runs at normal priority.
        _ = UnsafeSchedulingPolicy.startChildrenAtNormalPriority()
        let report = try await AppBench.run(options: options, app: app, workDirectory: work, runs: runs, eviction: eviction, notes: notes, log: log)
        try write(name: "app", report, markdown: AppBench.markdown(report))
        guard let baseline else { return }
        let earlier: AppBench.Report
        do {
            earlier = try JSONDecoder().decode(AppBench.Report.self, from: Data(contentsOf: URL(fileURLWithPath: baseline)))
        } catch {
            throw CommandFailure(what: "--baseline \(baseline)", why: "not a report of `dyld3 bench APP --json`: \(error)", kind: "bad-baseline")
        }
        let grown = AppBench.regressions(report, baseline: earlier, tolerance: tolerance)
        guard !grown.isEmpty else { return log("baseline \(baseline): nothing grew past +\(Int(tolerance * 100))%") }
        for line in grown { log("dyld3: bench: \(line)") }
        throw ExitCode(6)
    }
}

