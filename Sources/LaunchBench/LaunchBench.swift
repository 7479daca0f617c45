import ClosureBuild
import ClosureCache
import ClosureFormat
import Foundation
import LoaderCore

/// `dyld3 bench`: dyld2, dyld3, the mapping floor and glibc's loader on generated apps of
/// each size, measured side by side in one run, plus what the closure costs.
package enum LaunchBench {
    /// Measures every size in `configuration`; `log` gets progress lines.
    package static func run(_ configuration: BenchConfiguration, log: @escaping (String) -> Void) async throws -> BenchReport {
        // Each in-process launch allocates what the one before freed: left to its dynamic
        // thresholds, glibc gave that memory back after every launch and the next faulted it in
        // again (docs/performance.md, "The bench keeps its freed heap memory").
        if !UnsafeProcessMemory.keepFreedHeapMemory() { log("warning: glibc refused mallopt; freed heap memory goes back to the kernel") }
        let harness = try await GlibcHarness.build(configuration: configuration)
        let cache = ClosureCache(directory: configuration.workDirectory + "/bench-cache")
        let eviction = try configuration.evictionMethod()
        if let eviction { log("cold samples: evicting with \(eviction.rawValue)") }
        var sizes: [SizeResult] = []
        for dylibs in configuration.dylibCounts {
            log("\(dylibs) dylibs: preparing apps")
            let app = try await BenchApp.prepare(dylibs: dylibs, configuration: configuration, log: { log("  " + $0) })
            let bench = SizeBench(configuration: configuration, app: app, harness: harness, cache: cache, eviction: eviction, log: log)
            sizes.append(try await bench.measure())
        }
        return BenchReport(
            machine: .init(cores: ProcessInfo.processInfo.activeProcessorCount,
                           kernel: ProcessInfo.processInfo.operatingSystemVersionString,
                           date: ISO8601DateFormatter().string(from: Date())),
            runs: configuration.runs, arch: configuration.arch, style: configuration.style,
            seed: BenchConfiguration.seed, coldEviction: eviction, objc: configuration.objc, sizes: sizes)
    }

    /// The files ``write(_:to:)`` produces for `report` (`page-in.svg` only when page-in was measured).
    package static func outputFiles(_ report: BenchReport) -> [String] {
        ["bench.json", "bench.md", "time-vs-dylibs.svg", "dyld3-phases.svg"] + (measuredPageIn(report) ? ["page-in.svg"] : [])
    }

    static func measuredPageIn(_ report: BenchReport) -> Bool { report.sizes.contains { $0.pageIn != nil } }

    /// bench.json's encoding: snake_case keys, sorted, pretty-printed.
    package static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.keyEncodingStrategy = .convertToSnakeCase
        return encoder
    }

    /// A bench.json as ``encoder`` writes it.
    package static func decodeReport(_ data: Data) throws -> BenchReport {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try decoder.decode(BenchReport.self, from: data)
    }

    /// Writes the JSON, the Markdown table and the SVG charts into `directory`.
    package static func write(_ report: BenchReport, to directory: String) throws {
        var contents: [String: Data] = [
            "bench.json": try encoder.encode(report) + Data("\n".utf8),
            "bench.md": Data(MarkdownReport.render(report).utf8),
            "time-vs-dylibs.svg": Data(SVGCharts.timeVersusDylibs(report).utf8),
            "dyld3-phases.svg": Data(SVGCharts.dyld3Phases(report).utf8),
        ]
        if measuredPageIn(report) { contents["page-in.svg"] = Data(SVGCharts.pageIn(report).utf8) }
        try write(contents, to: directory)
    }

    /// Writes each file of `contents` (by name) into `directory`, made when missing.
    package static func write(_ contents: [String: Data], to directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for (name, data) in contents { try data.write(to: URL(fileURLWithPath: directory + "/" + name), options: .atomic) }
    }
}

extension ClosureCache {
    /// The cache at `directory`, ready for writing, and where the closure of `app` for `arch` goes in it.
    static func prepared(_ directory: String, forApp app: String, arch: String) throws -> (cache: ClosureCache, closurePath: String) {
        let cache = ClosureCache(directory: directory)
        try cache.prepareForWriting()
        return (cache, cache.closurePath(forApp: app, arch: arch))
    }
}

extension LaunchOptions {
    /// Builds the launch closure of these options, as `dyld3 install` builds it, and writes it to `path`.
    func writeClosure(to path: String) throws -> LaunchClosure {
        let closure = try ClosureBuilder.build(roots: roots, inserted: inserted, arch: arch, root: root, policy: signingPolicy)
        try ClosureFile.write(closure, to: path)
        return closure
    }
}

extension Launch {
    /// The report of a launch that was only measured, its memory released.
    func released() -> LaunchReport {
        memory.release()
        return report
    }
}
