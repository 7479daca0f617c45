import ClosureBuild
import ClosureCache
import ClosureFormat
import Dyld2
import Dyld3
import Foundation
import LoaderCore
import MachOReader
import SharedCacheBuild

/// `dyld3 bench APP`: the launch of one app (the user's own) measured every way this project
/// launches it, in one process, interleaved, and what in the app the loader's work goes to.
/// No path runs the app's code: each launch stops before `main`.
package enum AppBench {
    /// One image's share of the loader's work, counted (the launch paths time the whole launch, not each image).
    package struct ImageCost: Codable, Sendable, Equatable {
        package var path: String
        package var mappedBytes: UInt64
        package var fixups: Int
        /// Pages of the target's page size that the fixups and Objective-C writes dirty.
        package var dirtyPages: Int
        package var objcWrites: Int, initializers: Int
        package var inSharedCache: Bool

        enum CodingKeys: String, CodingKey {
            case path, mappedBytes = "mapped_bytes", fixups, dirtyPages = "dirty_pages", objcWrites = "objc_writes", initializers
            case inSharedCache = "in_shared_cache"
        }
    }

    package struct Report: Codable, Sendable {
        package var schemaVersion = 1
        package var app: String, arch: String
        package var root: String?
        package var runs: Int, images: Int, rebases: Int, binds: Int
        /// The target's page size (16 KiB for arm64, 4 KiB for x86_64) and the writable pages a
        /// launch dirties in it.
        package var targetPageSize: Int, dirtyPages: Int
        /// Path → total launch time to `main`, warm (and cold with --cold).
        package var warm: [String: Distribution]
        package var cold: [String: Distribution]?
        /// Path → phase → median nanoseconds, warm.
        package var phases: [String: [String: Int64]]
        /// Every image, heaviest first (fixups, then mapped bytes).
        package var imagesByCost: [ImageCost]
        /// Static initializers and `+load` methods in the order they run, by name.
        package var initializers: [String], loadMethods: [String]
        package var notes: [String]

        /// Snake case as written (``LaunchBench/encoder``), so a plain decoder reads a baseline back.
        enum CodingKeys: String, CodingKey {
            case schemaVersion = "schema_version", app, arch, root, runs, images, rebases, binds, targetPageSize = "target_page_size"
            case dirtyPages = "dirty_pages", warm = "warm_ns", cold = "cold_ns", phases = "phases_ns", imagesByCost = "images_by_cost"
            case initializers, loadMethods = "load_methods", notes
        }
    }

    /// The launch budget a loader's time is set beside: Apple's guidance for an app's
    /// launch to its first frame (400 ms).
    package static let budget: Int64 = 400_000_000

    /// The paths, in the order each round runs them (those the app cannot take are left out, with a note).
    package static let allPaths = ["dyld2", "dyld3", "prelinked", "dyld3_shared_cache"]

    /// Measures `app`, launched as `options` ask: `runs` rounds of every path, cold too with an
    /// `eviction`; closures, sets and slid copies are written under `workDirectory`, and `notes`
    /// (how the root was made, say) are said in the report.
    package static func run(options: LaunchOptions, app: String, workDirectory: String, runs: Int, eviction: EvictionMethod?,
                            notes: [String], log: (String) -> Void) async throws -> Report {
        var options = options
        options.run = false
        let arch = options.arch
        var notes = notes
        notes.append("no path runs the app's code: each launch stops before main (the loader's work only)")
        let (_, closurePath) = try ClosureCache.prepared(workDirectory + "/app-bench-cache", forApp: options.roots.last ?? app, arch: arch)
        let closure = try options.writeClosure(to: closurePath)
        log("closure: \(closure.images.count) images, \(closure.totalRebases) rebases, \(closure.totalBinds) binds")

        var launches: [String: () throws -> Launch] = [:]
        launches["dyld2"] = { try SlowPath.launch(options) }
        launches["dyld3"] = { try FastPath.launch(closurePath: closurePath, request: options) }
        let setPath = ClosureCache.prelinkedSetPath(forClosure: closurePath)
        do {
            let (set, data) = try PrelinkBuilder.build(closure, closurePath: closurePath)
            try PrelinkedSetFile.write(set, data: data, to: setPath)
            launches["prelinked"] = { try PrelinkedLaunch.launch(setPath: setPath, request: options) }
        } catch {
            notes.append("prelinked: not measured: \(error)")
        }
        if let sharedCachePath = options.root.flatMap({ SharedCacheBuilder.cachePath(root: $0, arch: arch) }) {
            let (_, boundPath) = try ClosureCache.prepared(workDirectory + "/app-bench-shared-cache", forApp: options.roots.last ?? app, arch: arch)
            do {
                let (bound, cached, patches) = try SharedCacheBinding.bind(closure, cachePath: sharedCachePath, closurePath: boundPath)
                try ClosureFile.write(bound, to: boundPath)
                notes.append("dyld3_shared_cache: \(cached) images from \(sharedCachePath) (\(patches) patches)")
                launches["dyld3_shared_cache"] = { try FastPath.launch(closurePath: boundPath, request: options) }
            } catch {
                notes.append("dyld3_shared_cache: not measured: \(error)")
            }
        } else {
            notes.append("dyld3_shared_cache: not measured: the root has no shared cache (dyld3 shared-cache build --root ROOT)")
        }
        let paths = allPaths.filter { launches[$0] != nil }
        let images = closure.images.map(\.path)
        var phaseSamples: [String: [String: [Int64]]] = [:]
        let files = Dictionary(uniqueKeysWithValues: paths.map { ($0, images + [closurePath, setPath]) })
        log("paths: \(paths.joined(separator: ", "))")
        let rounds = InterleavedRounds(runs: runs, paths: paths, files: files, eviction: eviction)
        let (warm, cold) = try await rounds.measure(log: log) { path, cold, kept in
            guard let launch = launches[path] else { return 0 }
            let report = try launch().released()
            if !cold, kept {
                for (phase, time) in report.timings where phase != .total && phase != .main {
                    phaseSamples[path, default: [:]][phase.rawValue, default: []].append(time)
                }
            }
            return report.timings[.total] ?? 0
        }
        let targetPage = arch.hasPrefix("arm64") ? 16384 : 4096
        let costs = try closure.images.indices.map { index in
            let image = closure.images[index]
            let fixups = try closure.fixups(ofImage: index, closurePath: closurePath)
            let objc = closure.objc.bindRuns.isEmpty ? [] : try closure.objcWrites(ofImage: index, closurePath: closurePath)
            let pages = Set((fixups + objc).map { $0.vmOffset / UInt64(targetPage) })
            return ImageCost(path: image.path, mappedBytes: image.plan.vmSize, fixups: fixups.count, dirtyPages: pages.count,
                             objcWrites: objc.count, initializers: image.initializers.count, inSharedCache: image.cacheSlot != nil)
        }
        let names = SymbolNamer(closure: closure)
        let initializers = closure.initializerOrder.flatMap { index in
            closure.images[index].initializers.map { names.name(image: index, offset: $0) }
        }
        let loads = closure.objc.loads.map { names.name(image: $0.method.image, offset: $0.method.offset) }
        return Report(
            app: app, arch: arch, root: options.root, runs: runs, images: closure.images.count,
            rebases: closure.totalRebases, binds: closure.totalBinds, targetPageSize: targetPage, dirtyPages: costs.reduce(0) { $0 + $1.dirtyPages },
            warm: warm, cold: cold, phases: phaseSamples.mapValues { $0.mapValues { Distribution($0).median } },
            imagesByCost: costs.sorted { ($0.fixups, $0.mappedBytes) > ($1.fixups, $1.mappedBytes) },
            initializers: initializers, loadMethods: loads, notes: notes)
    }

    /// What grew past `tolerance` (a fraction: 0.25 is 25 %) against `baseline`: the counts
    /// (images, fixups, dirty pages, initializers) and the warm medians of the paths both measured.
    package static func regressions(_ report: Report, baseline: Report, tolerance: Double) -> [String] {
        var found: [String] = []
        func check(_ what: String, _ now: Int64, _ then: Int64) {
            if Double(now) > Double(then) * (1 + tolerance) { found.append("\(what): \(now), baseline \(then) (more than +\(Int(tolerance * 100))%)") }
        }
        check("images", Int64(report.images), Int64(baseline.images))
        check("fixups", Int64(report.rebases + report.binds), Int64(baseline.rebases + baseline.binds))
        check("dirty pages", Int64(report.dirtyPages), Int64(baseline.dirtyPages))
        check("initializers", Int64(report.initializers.count), Int64(baseline.initializers.count))
        for (path, distribution) in report.warm.sorted(by: { $0.key < $1.key }) {
            guard let then = baseline.warm[path]?.median else { continue }
            check("\(path) warm median (ns)", distribution.median, then)
        }
        return found
    }

    /// The Markdown report: the paths, the phases, the heaviest images, the initializers.
    package static func markdown(_ report: Report) -> String {
        let ms: (Int64) -> String = MarkdownReport.milliseconds
        let paths = allPaths.filter { report.warm[$0] != nil }
        var out = "# Launch of \((report.app as NSString).lastPathComponent) [\(report.arch)]\n\n"
        out += "\(report.images) images, \(report.rebases) rebases, \(report.binds) binds; \(report.dirtyPages) writable pages dirtied "
            + "(\(report.targetPageSize / 1024) KiB pages, the target's). Median of \(report.runs) samples per path (p90 in parentheses), "
            + "in one process, interleaved.\n\n"
        let cold = report.cold.map { _ in ["cold"] } ?? []
        out += MarkdownReport.table(["path", "warm"] + cold + ["of the 400 ms budget"], paths.map { path in
            let warm = report.warm[path]
            return [path, MarkdownReport.cell(warm, format: ms)] + (report.cold.map { [MarkdownReport.cell($0[path], format: ms)] } ?? [])
                + [warm.map { String(format: "%.1f%%", 100 * Double($0.median) / Double(budget)) } ?? "–"]
        }) + "\n"
        let phases = LaunchReport.Phase.allCases.map(\.rawValue).filter { phase in paths.contains { report.phases[$0]?[phase] != nil } }
        out += "## phases (warm medians)\n\n" + MarkdownReport.otherMeaning + " total = the warm median.\n\n"
        out += MarkdownReport.phaseTable(phases, paths.map { path in
            (path, report.phases[path].map { phases in phases.merging(report.warm[path].map { ["total": $0.median] } ?? [:]) { $1 } })
        }, format: ms) + "\n"
        out += "## the ten heaviest images\n\n" + MarkdownReport.table(
            ["image", "mapped", "fixups", "dirty pages", "ObjC writes", "initializers"],
            report.imagesByCost.prefix(10).map { cost in
                [(cost.path as NSString).lastPathComponent + (cost.inSharedCache ? " (cache)" : ""), "\(cost.mappedBytes / 1024) KiB", "\(cost.fixups)",
                 "\(cost.dirtyPages)", "\(cost.objcWrites)", "\(cost.initializers)"]
            }) + "\n"
        out += "## initializers, in the order they run\n\n"
        out += report.initializers.isEmpty ? "none\n" : report.initializers.map { "- \($0)\n" }.joined()
        out += "\n## +load methods\n\n" + (report.loadMethods.isEmpty ? "none\n" : report.loadMethods.map { "- \($0)\n" }.joined())
        out += "\n## notes\n\n" + report.notes.map { "- \($0)\n" }.joined()
        return out
    }
}

/// Names an offset in an image of a closure by the nearest symbol at or below it in the image's
/// symbol table (local symbols too: static initializers are rarely exported); each image's
/// table is read once.
final class SymbolNamer {
    let closure: LaunchClosure
    private var symbols: [Int: [(offset: UInt64, name: String)]] = [:]

    init(closure: LaunchClosure) { self.closure = closure }

    func name(image index: Int, offset: UInt64) -> String {
        let file = (closure.images[index].path as NSString).lastPathComponent
        let sorted = symbols[index] ?? load(index)
        symbols[index] = sorted
        let after = sorted.partitionPoint { $0.offset <= offset }
        guard after > 0 else { return "\(file)+\(hex(offset))" }
        let (at, name) = sorted[after - 1]
        return "\(file): \(name)" + (at == offset ? "" : "+\(hex(offset - at))")
    }

    private func load(_ index: Int) -> [(offset: UInt64, name: String)] {
        guard let macho = try? ImageFile.load(path: closure.images[index].path, arch: closure.arch, root: nil).image,
              let table = try? SymbolTable(image: macho) else { return [] }
        let base = macho.preferredLoadAddress
        let found = (0..<table.count).compactMap { position -> (offset: UInt64, name: String)? in
            guard let entry = try? table.entry(position), !entry.isStab, !entry.isUndefined, entry.section != 0, entry.value >= base,
                  let name = try? table.name(of: entry) else { return nil }
            return (entry.value - base, name)
        }
        return found.sorted { $0.offset < $1.offset }
    }
}
