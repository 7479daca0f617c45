import ClosureBuild
import ClosureCache
import ClosureFormat
import Dyld2
import Dyld3
import Foundation
import ProcessRunner
import LaunchPlan
import LoaderCore
import SharedCache
import SharedCacheBuild

/// One size of the shared-cache bench: an app of `appFrameworks` own frameworks over a root of
/// `system` system frameworks (and libSystem), every path's samples, the cache's build.
package struct SharedCacheBenchResult: Codable, Sendable {
    package var system: Int, appFrameworks: Int, images: Int, imagesInCache: Int, patches: Int
    package var cacheBytes: UInt64
    /// `shared-cache build` of the root, in this process.
    package var cacheBuild: Int64
    package var warm: [String: Distribution], cold: [String: Distribution]?
    /// Concurrent launches of the app held alive, each process's memory (kB, from smaps).
    package var memory: ConcurrentMemory?
}

/// ``SharedCacheBench/concurrentLaunches`` processes launched from the cache at once and held
/// after their launch, half of them of one app and half of another over the same root and
/// cache: how much of the cache each maps and how much of it is its own.
package struct ConcurrentMemory: Codable, Sendable {
    package var processes: Int
    /// The apps launched (their main executables), and per process the index of its app.
    package var apps: [String]?, appOfProcess: [Int]?
    /// Per process: the cache's copy slid for the boot (`Rss`, `Pss`, `Shared_Clean`,
    /// `Private_Dirty` of its mappings) and the whole process (`smaps_rollup`'s `Pss` and
    /// `Private_Dirty`), in kB.
    package var cacheRss: [Int] = [], cachePss: [Int] = [], cacheSharedClean: [Int] = [], cachePrivateDirty: [Int] = []
    package var processPss: [Int] = [], processPrivateDirty: [Int] = []
}

package typealias SharedCacheBenchReport = SizesBenchReport<SharedCacheBenchResult>

/// `dyld3 bench --shared-cache`: the launch of an app whose system frameworks are in the
/// root, from the root's files and from the root's shared cache (docs/shared-cache.md).
package enum SharedCacheBench {
    /// The app's own frameworks, over every size of system root.
    package static let appFrameworks = 10
    /// The paths measured, in the order each round runs them (``markdown(_:)`` says what each does).
    package static let paths = ["floor", "dyld2", "dyld2_shared_cache", "dyld3", "dyld3_shared_cache", "prelinked_shared_cache", "cache_floor"]

    /// Measures an app over each system root size of `configuration`; `log` gets progress lines.
    package static func run(_ configuration: BenchConfiguration, log: @escaping (String) -> Void) async throws -> SharedCacheBenchReport {
        try await .measuring(configuration) { system, eviction in
            log("\(system) system + \(appFrameworks) app frameworks: preparing the app")
            let app = try await BenchApp.prepareMachO(dylibs: system + appFrameworks, system: system, configuration: configuration, log: { log("  " + $0) })
            return try await measure(app, system: system, configuration: configuration, eviction: eviction, log: log)
        }
    }

    static func measure(_ app: BenchApp, system: Int, configuration: BenchConfiguration, eviction: EvictionMethod?,
                        log: (String) -> Void) async throws -> SharedCacheBenchResult {
        let root = app.systemRoot, arch = configuration.arch
        let options = LaunchOptions(roots: [app.mainImage], arch: arch, root: root, run: false)
        let (built, buildTime) = try timed { try SharedCacheBuilder.build(root: root, arch: arch) }
        log("  cache: \(built.images.count) images, \(built.size) bytes, built in \(String(format: "%.2f s", Double(buildTime) / 1e9))")

        let (_, plainPath) = try ClosureCache.prepared(configuration.workDirectory + "/bench-cache-files", forApp: app.mainImage, arch: arch)
        let (sharedCache, sharedPath) = try ClosureCache.prepared(configuration.workDirectory + "/bench-cache-shared", forApp: app.mainImage, arch: arch)
        let closure = try options.writeClosure(to: plainPath)
        let (bound, cached, patches) = try SharedCacheBinding.bind(closure, cachePath: built.path, closurePath: sharedPath)
        try ClosureFile.write(bound, to: sharedPath)
        // The app's prelinked set over the cache: its own images, bound into the cache.
        let setPath = ClosureCache.prelinkedSetPath(forClosure: sharedPath)
        let (set, data) = try PrelinkBuilder.build(bound, closurePath: sharedPath)
        try PrelinkedSetFile.write(set, data: data, to: setPath)
        let floor = try MappingFloor(closure)
        let cacheFloor = try MappingFloor(bound, closurePath: sharedPath)
        let images = closure.images.map(\.path)
        let ownImages = bound.images.filter { $0.cacheSlot == nil }.map(\.path)
        guard let boundCache = bound.sharedCache else { throw CommandFailure.failed("\(sharedPath): not bound into \(built.path)") }
        let slidCopy = SharedCacheRegion.slidCopyPath(boundCache, directory: sharedCache.directory)
        // dyld2 from the cache: its slid copy, kept with the bound closure's, and its own tables.
        let cacheOptions = changed(options) { $0.sharedCache = SharedCacheRequest(path: built.path, slidCopyDirectory: sharedCache.directory, required: true) }
        let files: [String: [String]] = [
            "floor": images, "dyld2": images, "dyld2_shared_cache": ownImages + [built.path, slidCopy], "dyld3": images + [plainPath],
            "dyld3_shared_cache": ownImages + [sharedPath, slidCopy], "prelinked_shared_cache": ownImages + [setPath, slidCopy],
            "cache_floor": ownImages + [slidCopy],
        ]
        // Where each launch from the cache comes from, named when it did not use the cache.
        let cacheSources = ["dyld2_shared_cache": built.path, "dyld3_shared_cache": sharedPath, "prelinked_shared_cache": setPath]
        func launch(_ path: String, cold: Bool) throws -> Int64 {
            let report: LaunchReport
            switch path {
            case "floor", "cache_floor":
                return try (path == "floor" ? floor : cacheFloor).sample(readAhead: cold, protections: true)
            case "dyld2", "dyld2_shared_cache":
                report = try SlowPath.launch(path == "dyld2" ? options : cacheOptions).released()
            case "prelinked_shared_cache":
                report = try PrelinkedLaunch.launch(setPath: setPath, request: options).released()
            default:
                report = try FastPath.launch(closurePath: path == "dyld3" ? plainPath : sharedPath, request: options).released()
            }
            if let source = cacheSources[path], report.sharedCache == nil {
                throw CommandFailure.failed("\(source): the \(path) launch did not use the shared cache")
            }
            return report.timings[.total] ?? 0
        }
        let (warm, cold) = try await InterleavedRounds(runs: configuration.runs, paths: paths, files: files, eviction: eviction)
            .measure(log: log) { path, cold, _ in try launch(path, cold: cold) }
        var memory: ConcurrentMemory?
        if let tool = configuration.toolPath {
            log("  memory: \(concurrentLaunches) launches of two apps held at once")
            let second = try secondApp(app, workDirectory: configuration.workDirectory)
            let secondClosure = try ClosureBuilder.build(roots: [second], arch: arch, root: root)
            let secondPath = sharedCache.closurePath(forApp: second, arch: arch)
            try ClosureFile.write(try SharedCacheBinding.bind(secondClosure, cachePath: built.path, closurePath: secondPath).closure, to: secondPath)
            memory = try await concurrentMemory(tool: tool, apps: [app.mainImage, second], root: root, closures: sharedCache.directory)
        }
        return SharedCacheBenchResult(system: system, appFrameworks: appFrameworks, images: closure.images.count, imagesInCache: cached, patches: patches,
                                      cacheBytes: UInt64(built.size), cacheBuild: buildTime, warm: warm, cold: cold, memory: memory)
    }

    /// How many processes ``concurrentMemory(tool:apps:root:closures:)`` holds at once.
    package static let concurrentLaunches = 10

    /// A second app over `app`'s root: its bundle (main executable and own frameworks) copied
    /// to another directory, so that its own images are other files than the first app's
    /// (pages of their own) while its system frameworks are the root's, in the same cache.
    /// `gen-app` derives the system frameworks from the seed that derives the app's, so
    /// another seed would make another root.
    static func secondApp(_ app: BenchApp, workDirectory: String) throws -> String {
        let bundle = (app.mainImage as NSString).deletingLastPathComponent
        let directory = workDirectory + "/bench-second-app"
        let copy = directory + "/" + (bundle as NSString).lastPathComponent
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: bundle, toPath: copy)
        return copy + "/" + (app.mainImage as NSString).lastPathComponent
    }

    /// Launches `apps` from the cache in ``concurrentLaunches`` processes at once, the apps in
    /// turn (`dyld3 launch --mode dyld3 --no-run --hold`), and reads each one's smaps while
    /// all are held.
    static func concurrentMemory(tool: String, apps: [String], root: String, closures: String) async throws -> ConcurrentMemory {
        var measured = ConcurrentMemory(processes: 0, apps: apps, appOfProcess: [])
        // Each held launch is bounded: killed after 300 s if the bench never lets it go.
        func arguments(_ app: String) -> [String] {
            ["300", tool, "launch", app, "--root", root, "--cache", closures, "--mode", "dyld3", "--no-run", "--hold"]
        }
        func hold(_ pids: [Int32]) async throws {
            guard pids.count < concurrentLaunches else {
                for (index, pid) in pids.enumerated() {
                    measured.appOfProcess?.append(index % apps.count)
                    let cache = ProcessMemory.smapsOfFile(pid: pid, endingWith: "." + ClosureCache.slidCacheExtension)
                    let whole = ProcessMemory.rollup(pid: pid)
                    for (values, field, source) in [(\ConcurrentMemory.cacheRss, "Rss", cache), (\.cachePss, "Pss", cache), (\.cacheSharedClean, "Shared_Clean", cache),
                                                    (\.cachePrivateDirty, "Private_Dirty", cache), (\.processPss, "Pss", whole), (\.processPrivateDirty, "Private_Dirty", whole)] {
                        measured[keyPath: values].append(source[field] ?? 0)
                    }
                }
                measured.processes = pids.count
                return
            }
            let errorFile = NSTemporaryDirectory() + "dyld3-hold-\(getpid())-\(pids.count).stderr"
            defer { try? FileManager.default.removeItem(atPath: errorFile) }
            _ = try await ProcessRunner.session("/usr/bin/timeout", arguments(apps[pids.count % apps.count]), errorFile: errorFile) { session in
                var pid: Int32?
                while let line = try await session.readLine() {
                    if line.hasPrefix("held "), let held = Int32(line.dropFirst(5)) { pid = held; break }
                }
                guard let pid else {
                    throw CommandFailure.failed("\(session.command): no launch held: \((try? String(contentsOfFile: errorFile, encoding: .utf8)) ?? "")")
                }
                try await hold(pids + [pid])
            }
        }
        try await hold([])
        return measured
    }

    /// The Markdown report of `report`, with the targets checked.
    package static func markdown(_ report: SharedCacheBenchReport) -> String {
        let (results, runs) = (report.sizes, report.runs)
        let ms: (Int64) -> String = MarkdownReport.milliseconds, ratio: (Int64?, Int64?) -> String = MarkdownReport.ratio
        var out = "# The dyld shared cache: launches from the root's files and from its cache\n\n"
        out += "Median of \(runs) samples per path (p90 in parentheses), in one process, interleaved; no path runs code. "
            + "An app of \(appFrameworks) own frameworks over a root of N system frameworks and libSystem. floor: reserve, open and map every "
            + "segment of every image, one store per fixup page, final protections. dyld2, dyld3: every image from its file. "
            + "dyld2_shared_cache: dyld2 taking the dylibs the root's cache holds from it. "
            + "dyld3_shared_cache: the closure bound into the root's cache. prelinked_shared_cache: the app's prelinked set bound into "
            + "the cache (its own images, slid at launch). cache_floor: the cache's copy slid for the boot mapped "
            + "and protected, the app's own images mapped, one store per fixup page of theirs and of the cache's patches, protections.\n\n"
        out += MarkdownReport.sampleSections(
            results, warm: \.warm, cold: \.cold, keys: [("system", { "\($0.system)" }), ("images", { "\($0.images)" })], paths: paths,
            ratios: [("cache / dyld3", "dyld3_shared_cache", "dyld3"), ("cache / its floor", "dyld3_shared_cache", "cache_floor"),
                     ("set / its floor", "prelinked_shared_cache", "cache_floor")])
        out += "## the cache\n\n" + MarkdownReport.table(
            ["system", "images in the cache", "patches", "cache bytes", "build"],
            results.map { ["\($0.system)", "\($0.imagesInCache)", "\($0.patches)", "\($0.cacheBytes)", ms($0.cacheBuild)] })
        let held = results.compactMap { result in result.memory.map { (result.system, $0) } }
        if !held.isEmpty {
            func median(_ values: [Int]) -> String { values.isEmpty ? "–" : "\(values.sorted()[values.count / 2]) kB" }
            out += "\n## memory: \(concurrentLaunches) launches held at once, the apps in turn (medians per process of each app)\n\n" + MarkdownReport.table(
                ["system", "app", "processes", "cache Rss", "cache Pss", "cache shared clean", "cache private dirty", "process Pss", "process private dirty"],
                held.flatMap { system, memory in
                    let apps = memory.apps ?? ["(one app)"]
                    return apps.indices.map { app in
                        let mine = memory.cacheRss.indices.filter { (memory.appOfProcess?[$0] ?? 0) == app }
                        func pick(_ values: [Int]) -> [Int] { mine.compactMap { $0 < values.count ? values[$0] : nil } }
                        return ["\(system)", (apps[app] as NSString).lastPathComponent + " (\(app + 1))", "\(mine.count)", median(pick(memory.cacheRss)),
                                median(pick(memory.cachePss)), median(pick(memory.cacheSharedClean)), median(pick(memory.cachePrivateDirty)),
                                median(pick(memory.processPss)), median(pick(memory.processPrivateDirty))]
                    }
                })
        }
        out += "\n## targets (warm medians)\n\n"
        for result in results {
            let cache = result.warm["dyld3_shared_cache"]?.median ?? 0
            let plain = result.warm["dyld3"]?.median ?? 0, floor = result.warm["cache_floor"]?.median ?? 0
            out += "- \(result.system) system frameworks: dyld3 with the cache \(ratio(cache, plain)) of dyld3 without it (target ≤ 0.35×), "
                + "\(ratio(cache, floor)) of the cache's floor (target ≤ 1.2×)\n"
        }
        for result in results {
            let cached = result.warm["dyld2_shared_cache"]?.median, files = result.warm["dyld2"]?.median
            out += "- \(result.system) system frameworks: dyld2 with the cache \(ratio(cached, files)) of dyld2 without it\n"
        }
        return out
    }
}
