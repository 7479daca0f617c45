import ClosureBuild
import ClosureFormat
import Dyld3
import Foundation
import ClosureCache
import LaunchPlan
import LoaderCore
import LoaderSystem
import LaunchMemory

/// `dyld3 bench --prelinked` (docs/prelinked.md), one size: each path of ``PrelinkBench/paths``
/// interleaved in one process, warm and cold; the set's install time and its size beside the
/// images'. No path runs code.
package struct PrelinkedBenchResult: Codable, Sendable {
    package var dylibs: Int, images: Int, slideLocations: Int, slidePages: Int
    /// The set file, and the images' files it was built from.
    package var setBytes: UInt64, imageBytes: UInt64
    /// Building and writing the set (after the closure), as `install --prelink` does.
    package var install: Distribution
    /// The set's copy slid for this boot: writing it (once per boot: the first launch, or
    /// install), and its size.
    package var slidWrite: Int64
    package var slidBytes: UInt64
    /// The slid copy's mapping calls: one `mmap`, then one `mprotect` per run of one protection.
    package var mappingCalls: Int
    /// Per path (``PrelinkBench/paths``): launch times, warm and cold.
    package var warm: [String: Distribution], cold: [String: Distribution]?
    /// Why page-in launches were eager (userfaultfd unavailable), if they were.
    package var pageInFallbackReason: String?
    /// Images whose identity a warm prelinked launch hashed (0 unless the images are younger than 2 s).
    package var imagesHashed: Int

    enum CodingKeys: String, CodingKey {
        case dylibs, images, slideLocations, slidePages, setBytes, imageBytes, install = "installNs", slidWrite = "slidWriteNs", slidBytes, mappingCalls
        case warm = "warmNs", cold = "coldNs", pageInFallbackReason, imagesHashed
    }
}

/// `prelinked.json`: snake_case keys (``LaunchBench/encoder``), each time in nanoseconds.
package typealias PrelinkedBenchReport = SizesBenchReport<PrelinkedBenchResult>

package enum PrelinkBench {
    /// The paths measured, in the order each round runs them: the per-image mapping floor
    /// (without and with protections), dyld3, the set as `launch --mode prelinked` launches it
    /// (eager and page-in), the set slid at launch (`--slide-per-launch`), the set's own floor.
    package static let paths = ["floor", "floor_protected", "dyld3", "prelinked", "prelinked_page_in", "slid_at_launch", "slid_at_launch_page_in",
                                "prelinked_floor"]

    /// Measures every size of `configuration`; `log` gets progress lines.
    package static func run(_ configuration: BenchConfiguration, log: @escaping (String) -> Void) async throws -> PrelinkedBenchReport {
        let cache = ClosureCache(directory: configuration.workDirectory + "/bench-cache")
        try cache.prepareForWriting()
        return try await .measuring(configuration) { dylibs, eviction in
            log("\(dylibs) dylibs: preparing the app")
            let app = try await BenchApp.prepareMachO(dylibs: dylibs, configuration: configuration, log: { log("  " + $0) })
            return try await measure(app, configuration: configuration, cache: cache, eviction: eviction, log: log)
        }
    }

    static func measure(_ app: BenchApp, configuration: BenchConfiguration, cache: ClosureCache, eviction: EvictionMethod?,
                        log: (String) -> Void) async throws -> PrelinkedBenchResult {
        let options = LaunchOptions(roots: [app.mainImage], arch: configuration.arch, root: app.systemRoot, run: false)
        let pageIn = changed(options) { $0.fixups = .pageIn }
        let closurePath = cache.closurePath(forApp: app.mainImage, arch: configuration.arch)
        let setPath = ClosureCache.prelinkedSetPath(forClosure: closurePath)
        let closure = try options.writeClosure(to: closurePath)
        let installs = try (0..<3).map { _ in
            try timed {
                let (set, data) = try PrelinkBuilder.build(closure, closurePath: closurePath)
                try PrelinkedSetFile.write(set, data: data, to: setPath)
                return set
            }
        }
        let set = installs[installs.count - 1].value
        log("  set: \(set.slideCount) slide locations, \(set.rangeSize) bytes of data")
        let floor = try MappingFloor(closure)
        let prelinkedFloor = try PrelinkedFloor(set, setPath: setPath)
        let images = closure.images.map(\.path)
        let slidPath = ClosureCache.slidSetPath(forSet: setPath)
        let files: [String: [String]] = [
            "floor": images, "floor_protected": images, "dyld3": images + [closurePath],
            "prelinked": [setPath, slidPath], "prelinked_page_in": [setPath, slidPath], "slid_at_launch": [setPath],
            "slid_at_launch_page_in": [setPath], "prelinked_floor": [slidPath],
        ]
        let atLaunch = changed(options) { $0.slidePerLaunch = true }, atLaunchPageIn = changed(pageIn) { $0.slidePerLaunch = true }
        let requests = ["prelinked": options, "prelinked_page_in": pageIn, "slid_at_launch": atLaunch, "slid_at_launch_page_in": atLaunchPageIn]
        var fallback: String?, hashed = 0
        func launch(_ path: String, cold: Bool) throws -> Int64 {
            switch path {
            case "floor", "floor_protected":
                return try floor.sample(readAhead: cold, protections: path == "floor_protected")
            case "dyld3":
                return try FastPath.launch(closurePath: closurePath, request: options).released().timings[.total] ?? 0
            case "prelinked", "prelinked_page_in", "slid_at_launch", "slid_at_launch_page_in":
                let report = try PrelinkedLaunch.launch(setPath: setPath, request: requests[path] ?? options).released()
                if path == "slid_at_launch_page_in" { fallback = report.pageInFallback.map(String.init(describing:)) } else { hashed = report.imagesHashed ?? 0 }
                if path.hasPrefix("prelinked"), !report.slidForBoot {
                    throw CommandFailure.failed("\(setPath): the launch slid the set itself: \(report.slideAtLaunch.map(String.init(describing:)) ?? "?")")
                }
                return report.timings[.total] ?? 0
            default:
                return try prelinkedFloor.launch()
            }
        }
        let (warm, cold) = try await InterleavedRounds(runs: configuration.runs, paths: paths, files: files, eviction: eviction)
            .measure(log: log) { path, cold, _ in try launch(path, cold: cold) }
        return PrelinkedBenchResult(
            dylibs: app.dylibs, images: closure.images.count, slideLocations: set.slideCount, slidePages: prelinkedFloor.pages.count,
            setBytes: FileStatus.of(setPath)?.size ?? 0, imageBytes: closure.images.reduce(0) { $0 + $1.identity.size },
            install: Distribution(installs.map(\.nanoseconds)), slidWrite: prelinkedFloor.writeNanoseconds, slidBytes: FileStatus.of(slidPath)?.size ?? 0,
            mappingCalls: 1 + prelinkedFloor.protectionCalls, warm: warm, cold: cold,
            pageInFallbackReason: fallback, imagesHashed: hashed)
    }

    /// The Markdown table of `report`, with the targets checked.
    package static func markdown(_ report: PrelinkedBenchReport) -> String {
        let (results, runs) = (report.sizes, report.runs)
        let ms: (Int64) -> String = MarkdownReport.milliseconds
        var out = "# Prelinked sets: launch against the per-image mapping floor\n\n"
        out += "Median of \(runs) samples per path (p90 in parentheses), warm, in one process, interleaved; no path runs code. "
            + "floor: reserve, open and map every segment of every image, one write per fixup page; floor + protections: then each "
            + "segment's final protection. prelinked: the set's copy slid for this boot, mapped (page-in asked for in prelinked_page_in: "
            + "nothing is left to page in); slid_at_launch: the set slid to a new address by the launch (--slide-per-launch), eager and page-in. "
            + "prelinked floor: the slid copy's one mmap and its mprotects.\n\n"
        out += MarkdownReport.sampleSections(
            results, warm: \.warm, cold: \.cold, keys: [("dylibs", { "\($0.dylibs)" }), ("images", { "\($0.images)" }), ("slide locations", { "\($0.slideLocations)" })],
            paths: paths, ratios: [("prelinked / floor + protections", "prelinked", "floor_protected"),
                                   ("page-in / floor + protections", "prelinked_page_in", "floor_protected")])
        out += "## install and disk\n\n" + MarkdownReport.table(
            ["dylibs", "set build + write", "set bytes", "images' bytes", "set / images", "copy slid for the boot: write", "copy bytes", "mapping calls"],
            results.map { result in
                ["\(result.dylibs)", ms(result.install.median), "\(result.setBytes)", "\(result.imageBytes)",
                 String(format: "%.2f×", Double(result.setBytes) / Double(max(1, result.imageBytes))), ms(result.slidWrite),
                 "\(result.slidBytes)", "\(result.mappingCalls)"]
            })
        out += "\n## targets (warm medians)\n\n"
        for result in results where [400, 1000].contains(result.dylibs) {
            let floor = result.warm["floor_protected"]?.median ?? 0
            for (path, target) in [("prelinked", 0.5), ("prelinked_page_in", 0.3)] {
                let value = Double(result.warm[path]?.median ?? 0) / Double(max(1, floor))
                out += "- \(value <= target ? "met" : "NOT met"): \(result.dylibs) dylibs: \(path) ≤ \(target)× the per-image floor + protections "
                    + String(format: "(%.2f×)", value) + "\n"
            }
        }
        if let reason = results.compactMap(\.pageInFallbackReason).first { out += "\npage-in fell back to eager: \(reason)\n" }
        if let cold = report.coldEviction { out += "\ncold samples: page cache emptied with \(cold.rawValue) before each.\n" }
        return out
    }
}

/// The prelinked set's floor: the least a launch of it does. Its copy slid for this boot
/// mapped read-only at its base in one `mmap`, then given its protection runs
/// (``SlidPrelinkedSetFile/Opened/mapRange()``, what the launch calls). No file is opened
/// but the copy (once, before timing), no image is identified, no metadata read, nothing
/// stored.
struct PrelinkedFloor {
    /// The copy, written fresh and opened once before timing (one `open` and `fstat`, ≈ 5 µs, left out).
    let copy: SlidPrelinkedSetFile.Opened
    /// One slide location (offset in the range) in each page holding one.
    let pages: [UInt64]
    var protectionCalls: Int { copy.header.protections.count }
    /// Writing the copy (slid to a new random base).
    let writeNanoseconds: Int64

    init(_ set: PrelinkedSet, setPath: String) throws {
        var pages: [UInt64] = []
        let page = LaunchMemory.pageSize
        try FixupRunWalk(set.slideRuns).forEachRebase { _, _ in } _: { location, _ in
            if pages.last.map({ $0 / page != location / page }) ?? true { pages.append(location) }
        }
        self.pages = pages
        let opened = try PrelinkedSetFile.open(setPath)
        let copyPath = ClosureCache.slidSetPath(forSet: setPath)
        writeNanoseconds = try timed { try SlidPrelinkedSetFile.write(for: opened, to: copyPath) }.nanoseconds
        switch SlidPrelinkedSetFile.open(copyPath, for: opened) {
        case let .success(copy): self.copy = copy
        case let .failure(unusable): throw CommandFailure.failed("\(copyPath): \(unusable)")
        }
    }

    /// One floor launch: nanoseconds from the `mmap` to the last protection.
    func launch() throws -> Int64 {
        let (range, elapsed) = try timed { try copy.mapRange() }
        guard let range else { throw CommandFailure.failed("\(copy.path): the range it is slid to is taken") }
        range.release()
        return elapsed
    }
}
