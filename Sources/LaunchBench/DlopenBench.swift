import ClosureBuild
import ClosureCache
import ClosureFormat
import Dyld2
import Dyld3
import Foundation
import LaunchPlan
import LoaderCore

/// `dyld3 bench --dlopen`: where dyld3's fixed costs show, small apps and `dlopen`.
package struct DlopenBenchReport: Codable, Sendable {
    package var schemaVersion = 1
    package var runs: Int
    package var apps: [SmallAppResult]
    package var plugins: [PluginResult]
}

/// One small app (`gen-app --dylibs N`): its launch to `main` by dyld2 and dyld3.
package struct SmallAppResult: Codable, Sendable {
    package var frameworks: Int, images: Int
    /// In this process, interleaved: each path's in-process total (no code runs).
    package var warm: [String: Distribution]
    /// Each sample a fresh `dyld3 launch --no-run --json` process: its in-process total.
    package var fresh: [String: Distribution]
}

/// One plugin app (`gen-app --plugin --dylibs N`): main links libSystem alone and opens a bundle
/// that links the N frameworks. The time of that `dlopen`, in each path.
package struct PluginResult: Codable, Sendable {
    package var frameworks: Int
    /// Images at launch, and the images the `dlopen` adds.
    package var launchImages: Int, added: Int
    /// In this process, interleaved: the `dlopen` alone, after an untimed launch (no code runs,
    /// so no initializer either).
    package var warm: [String: Distribution]
    /// Each sample a fresh `dyld3 launch --json` process running the app: `main`'s time
    /// (the `dlopen`, the plugin's initializers, `dlsym` and the call).
    package var fresh: [String: Distribution]
}

package enum DlopenBench {
    /// Framework counts of the small apps: 3 and 10 images (main, the frameworks, libSystem).
    package static let appFrameworks = [1, 8]
    /// Framework counts of the plugins: a `dlopen` adding 2 and 50 images (the bundle and them).
    package static let pluginFrameworks = [1, 49]
    static let appPaths = ["dyld2", "dyld3"]
    /// dyld2's `dlopen`; dyld3's through the dlopen closure `install --dlopen` built, and
    /// through one built at run time (the launch closure has none).
    static let pluginPaths = ["dyld2", "dyld3_prebuilt", "dyld3_runtime"]
    static let pluginPath = "@executable_path/PlugIns/Plugin.bundle/Plugin"

    package static func run(_ configuration: BenchConfiguration, log: @escaping (String) -> Void) async throws -> DlopenBenchReport {
        var apps: [SmallAppResult] = [], plugins: [PluginResult] = []
        for (frameworks, plugin) in appFrameworks.map({ ($0, false) }) + pluginFrameworks.map({ ($0, true) }) {
            log("\(plugin ? "plugin" : "small app") of \(frameworks) frameworks: preparing")
            let app = try await BenchApp.prepareMachO(dylibs: frameworks, plugin: plugin, configuration: configuration, log: { log("  " + $0) })
            if plugin {
                plugins.append(try await measurePlugin(app, configuration: configuration, log: log))
            } else {
                apps.append(try await measureApp(app, configuration: configuration, log: log))
            }
        }
        return DlopenBenchReport(runs: configuration.runs, apps: apps, plugins: plugins)
    }

    static func measureApp(_ app: BenchApp, configuration: BenchConfiguration, log: (String) -> Void) async throws -> SmallAppResult {
        let options = LaunchOptions(roots: [app.mainImage], arch: configuration.arch, root: app.systemRoot, run: false)
        let (cache, closurePath) = try ClosureCache.prepared(configuration.workDirectory + "/bench-cache-small-\(app.dylibs)", forApp: app.mainImage, arch: configuration.arch)
        let closure = try options.writeClosure(to: closurePath)
        let (warm, _) = try await InterleavedRounds(runs: configuration.runs, paths: appPaths, files: [:], eviction: nil).measure(log: log) { path, _, _ in
            let launch = path == "dyld2" ? try SlowPath.launch(options) : try FastPath.launch(closurePath: closurePath, request: options)
            return launch.released().timings[.total] ?? 0
        }
        let fresh = try await InterleavedRounds.fresh(tool: configuration.toolPath, runs: configuration.runs, paths: appPaths, log: log,
                                                      ", one process each") { tool, path in
            [try await app.freshLaunch(tool, mode: path, cache: cache.directory, arch: configuration.arch, run: false,
                                       stderrPath: stderrPath(configuration)).total]
        }
        return SmallAppResult(frameworks: app.dylibs, images: closure.images.count, warm: warm, fresh: fresh.mapValues { $0[0] })
    }

    static func measurePlugin(_ app: BenchApp, configuration: BenchConfiguration, log: (String) -> Void) async throws -> PluginResult {
        let arch = configuration.arch
        let options = LaunchOptions(roots: [app.mainImage], arch: arch, root: app.systemRoot, run: false)
        // Two caches: one whose closure holds the plugin's dlopen closure, one whose has none.
        let (prebuilt, prebuiltPath) = try ClosureCache.prepared(configuration.workDirectory + "/bench-cache-plugin-\(app.dylibs)", forApp: app.mainImage, arch: arch)
        let (bare, barePath) = try ClosureCache.prepared(configuration.workDirectory + "/bench-cache-plugin-\(app.dylibs)-bare", forApp: app.mainImage, arch: arch)
        let closure = try options.writeClosure(to: barePath)
        var withDlopen = closure
        guard case let .closure(record) = try DlopenClosureBuilder.build(pluginPath, request: options, launch: closure, loaded: closure.images) else {
            throw CommandFailure.failed("\(app.mainImage): \(pluginPath) names an image the launch loads")
        }
        withDlopen.dlopens = [record]
        try ClosureFile.write(withDlopen, to: prebuiltPath)
        let runtime = LaunchConfiguration(dlopenClosures: DlopenClosureBuilder.resolve)
        var added = 0
        let (warm, _) = try await InterleavedRounds(runs: configuration.runs, paths: pluginPaths, files: [:], eviction: nil).measure(log: log) { path, _, _ in
            let launch = switch path {
            case "dyld2": try SlowPath.launch(options)
            case "dyld3_prebuilt": try FastPath.launch(closurePath: prebuiltPath, request: options)
            default: try FastPath.launch(closurePath: barePath, request: options, configuration: runtime)
            }
            defer { launch.memory.release() }
            guard let loader = launch.memory.dynamicLoader?.loader else { throw CommandFailure.failed("\(app.mainImage): the \(path) launch has no dlopen") }
            let time = try timed { try loader.open(pluginPath, mode: RTLD_NOW) }.nanoseconds
            let event = loader.events.last
            let expected = path == "dyld2" ? nil : path == "dyld3_prebuilt" ? "closure" : "runtime closure"
            guard let event, event.via == expected || expected == nil else {
                throw CommandFailure.failed("\(app.mainImage): the \(path) dlopen went through \(event?.via ?? "nothing"), not \(expected ?? "-")")
            }
            added = event.loaded.count
            return time
        }
        let fresh = try await InterleavedRounds.fresh(tool: configuration.toolPath, runs: configuration.runs, paths: pluginPaths, log: log,
                                                      ", one process each, running main") { tool, path in
            // The bare closure written again: a launch keeps the dlopen closure it builds.
            if path == "dyld3_runtime" { try ClosureFile.write(closure, to: barePath) }
            let cache = path == "dyld3_prebuilt" ? prebuilt.directory : bare.directory
            return [try await app.freshLaunch(tool, mode: path == "dyld2" ? "dyld2" : "dyld3", cache: cache, arch: configuration.arch, run: true,
                                              stderrPath: stderrPath(configuration)).main]
        }
        return PluginResult(frameworks: app.dylibs, launchImages: closure.images.count, added: added, warm: warm, fresh: fresh.mapValues { $0[0] })
    }

    /// Where the fresh launches' stderr goes.
    static func stderrPath(_ configuration: BenchConfiguration) -> String { configuration.workDirectory + "/dlopen-bench.stderr" }

    package static func markdown(_ report: DlopenBenchReport) -> String {
        func ms(_ distribution: Distribution?) -> String { distribution.map { MarkdownReport.milliseconds($0.median) } ?? "–" }
        func ratio(_ a: Distribution?, _ b: Distribution?) -> String { MarkdownReport.ratio(a?.median, b?.median) }
        var out = "# Small apps and dlopen: dyld2 and dyld3\n\n"
        out += "Medians of \(report.runs) samples (every sample, and p90, in dlopen.json). warm: in this process, the paths "
            + "interleaved. fresh: each sample a new `dyld3 launch --json` process, which also pays the Swift runtime's first "
            + "use of every type the path meets (docs/performance.md).\n\n"
        out += "## small apps: the launch (no code runs)\n\n"
        out += MarkdownReport.table(["images", "dyld2 warm", "dyld3 warm", "ratio", "dyld2 fresh", "dyld3 fresh", "ratio"], report.apps.map { app in
            ["\(app.images)", ms(app.warm["dyld2"]), ms(app.warm["dyld3"]), ratio(app.warm["dyld3"], app.warm["dyld2"]),
             ms(app.fresh["dyld2"]), ms(app.fresh["dyld3"]), ratio(app.fresh["dyld3"], app.fresh["dyld2"])]
        })
        out += "\n## dlopen of a plugin\n\n"
        out += "The app launches with 2 images; its `dlopen` adds the bundle and the frameworks it links. warm: the `dlopen` alone, "
            + "after an untimed launch, no initializer run. fresh: `main`'s time in a process that runs the app (the `dlopen`, the "
            + "plugin's initializers, `dlsym`, the call). prebuilt: through the dlopen closure `install --dlopen` built; runtime: "
            + "through one the launch builds (its closure has none). Ratios are to dyld2.\n\n"
        for (title, pick) in [("warm", { (p: PluginResult) in p.warm }), ("fresh", { (p: PluginResult) in p.fresh })] {
            guard report.plugins.contains(where: { !pick($0).isEmpty }) else { continue }
            out += "### \(title)\n\n" + MarkdownReport.table(
                ["images added", "dyld2", "dyld3 prebuilt", "ratio", "dyld3 runtime", "ratio"],
                report.plugins.map { plugin in
                    let samples = pick(plugin)
                    return ["\(plugin.added)", ms(samples["dyld2"]), ms(samples["dyld3_prebuilt"]), ratio(samples["dyld3_prebuilt"], samples["dyld2"]),
                            ms(samples["dyld3_runtime"]), ratio(samples["dyld3_runtime"], samples["dyld2"])]
                }) + "\n"
        }
        return out
    }
}
