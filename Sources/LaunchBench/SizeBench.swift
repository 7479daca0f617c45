import Dyld2
import Dyld3
import Foundation
import ClosureCache
import LaunchPlan
import LoaderCore
import ClosureFormat
import LaunchMemory

/// The measurements of one app size: setup (apps, closure, page list, harness) outside
/// any timed region, then the launch paths round-robin: warm, cold (`--cold`), then fresh.
struct SizeBench {
    let configuration: BenchConfiguration
    let app: BenchApp
    let harness: GlibcHarness
    let cache: ClosureCache
    /// How cold samples empty the page cache; nil: no cold samples.
    let eviction: EvictionMethod?
    let log: (String) -> Void

    var options: LaunchOptions {
        LaunchOptions(roots: [app.mainImage], arch: configuration.arch, root: app.systemRoot, run: false)
    }
    var stderrPath: String { configuration.workDirectory + "/bench-tools/child.stderr" }

    func measure() async throws -> SizeResult {
        let runs = max(1, configuration.runs)
        let closurePath = cache.closurePath(forApp: app.mainImage, arch: configuration.arch)
        let (build, closure) = try buildClosure(at: closurePath, runs: runs)
        let fileBytes = (try FileManager.default.attributesOfItem(atPath: closurePath)[.size] as? Int) ?? 0
        let floor = try MappingFloor(closure)
        let metadata = try imageMetadataBytes(closure)
        let elfRelocations = try app.elfRelocations()
        let fixups = closure.totalRebases + closure.totalBinds

        // One harness per layout of the twin for the page counts and every warm and cold
        // round: its loads interleave with the in-process launches (each harness times its
        // own dlopen). Cold samples first evict the files their path touches: the images
        // (dyld2, both floors), the images and the closure (dyld3), the twin's objects in that
        // layout (glibc); in the discarded round, the pages still resident are counted.
        let images = closure.images.map(\.path)
        let files = [
            LaunchPath.dyld2.rawValue: images, LaunchPath.dyld3.rawValue: images + [closurePath], LaunchPath.floor.rawValue: images,
            LaunchPath.floorProtected.rawValue: images, LaunchPath.glibc.rawValue: app.elfFiles(.perFrameworkDirectories),
            LaunchPath.glibcOneDir.rawValue: app.elfFiles(.oneDirectory),
        ]
        let perFrameworkStderr = stderrPath + ".per-framework", oneDirStderr = stderrPath + ".one-dir"
        let (rounds, _) = try await harness.withSession(app: app, layout: .perFrameworkDirectories, stderrPath: perFrameworkStderr) { perFramework in
            try await harness.withSession(app: app, layout: .oneDirectory, stderrPath: oneDirStderr) { oneDir in
                let sessions: [LaunchPath: GlibcHarness.Session] = [.glibc: perFramework, .glibcOneDir: oneDir]
                let dirtied = try await pagesDirtied(closurePath: closurePath, floor: floor, sessions: sessions)
                var phases: [String: [String: [Int64]]] = [:], resident: [String: ResidentPages] = [:]
                let rounds = InterleavedRounds(runs: runs, paths: LaunchPath.allCases.map(\.rawValue), files: files, eviction: eviction)
                let (warm, cold) = try await rounds.measure(log: log) { name, cold, kept in
                    let path = LaunchPath(rawValue: name)!
                    if cold, !kept { resident[name] = try PageCache.residentPages(files[name] ?? []) }
                    let sample = try await launch(path, closurePath: closurePath, floor: floor, sessions: sessions, cold: cold)
                    if kept, path == .dyld3 || (path == .dyld2 && !cold) {
                        for (phase, time) in sample.phases { phases[(cold ? "cold " : "") + name, default: [:]][phase.rawValue, default: []].append(time) }
                    }
                    return sample.nanoseconds
                }
                // The phases are by path: `dyld3`, `dyld2`, `cold dyld3`.
                return (dirtied: dirtied, warm: warm, cold: cold, phases: phases, resident: resident)
            }.value
        }
        let (dyld3Phases, dyld2Phases) = (medians(rounds.phases["dyld3"]), medians(rounds.phases["dyld2"]))

        // Each fresh sample a new process: `dyld3 launch --no-run --json` (its in-process total)
        // for dyld2 and dyld3, a one-shot harness for each glibc layout; and its peak RSS.
        let fresh = try await InterleavedRounds.fresh(tool: configuration.toolPath, runs: runs, paths: ([.dyld2, .dyld3] + LaunchPath.glibcPaths).map(\.rawValue),
                                                      log: log, " of dyld2, dyld3 and glibc in both layouts, one process each") { tool, path in
            if let layout = ELFLayout.allCases.first(where: { $0.path.rawValue == path }) {
                let (load, maxRSS) = try await harness.withSession(app: app, layout: layout, stderrPath: stderrPath) { try await $0.load() }
                return [load, Int64(maxRSS)]
            }
            let launch = try await app.freshLaunch(tool, mode: path, cache: cache.directory, arch: configuration.arch, run: false,
                                                   harness: harness, stderrPath: stderrPath)
            return [launch.total, launch.maxRSS]
        }

        var pageIn: PageInResult?
        if configuration.pageIn {
            log("  page-in: \(runs) rounds of eager and page-in dyld3, touching 10%, 50%, 100% of the fixup pages")
            let pageInOptions = changed(options) { $0.faultAround = configuration.faultAround }
            pageIn = try PageInBench.measure(closure, closurePath: closurePath, options: pageInOptions, runs: runs)
        }

        var codeSigning: CodeSigningCost?
        if closure.images.contains(where: { $0.identity.signature != nil }) {
            log("  code signing: \(runs) rounds of each check, and eager dyld3 without and with --verify-pages")
            codeSigning = try CodeSigningBench.measure(closure, closurePath: closurePath, options: options, runs: runs,
                                                       dyld3Median: rounds.warm[LaunchPath.dyld3.rawValue]?.median ?? 0)
        }
        var perFixup: [String: Double] = [:]
        for (path, distribution) in rounds.warm {
            let count = LaunchPath.glibcPaths.map(\.rawValue).contains(path) ? elfRelocations : fixups
            perFixup[path] = count > 0 ? Double(distribution.median) / Double(count) : 0
        }
        return SizeResult(
            dylibs: app.dylibs, images: closure.images.count, fixups: fixups,
            rebases: closure.totalRebases, binds: closure.totalBinds, elfRelocations: elfRelocations,
            fixupPages: floor.pageCount, warm: rounds.warm, fresh: fresh.mapValues { $0[0] }, freshMaxRssKilobytes: fresh.mapValues { $0[1] },
            dyld3Phases: dyld3Phases, dyld2Phases: dyld2Phases, nanosecondsPerFixup: perFixup, pagesDirtied: rounds.dirtied,
            benchMaxRssKilobytes: UnsafeProcessMemory.maxRSSKilobytes(),
            closure: ClosureCost(
                build: build, fileBytes: fileBytes,
                bytesPerFixup: fixups > 0 ? Double(fileBytes) / Double(fixups) : 0,
                imageMetadataBytes: metadata,
                relativeToMetadata: metadata > 0 ? Double(fileBytes) / Double(metadata) : 0),
            cold: rounds.cold, coldDyld3Phases: rounds.cold.map { _ in medians(rounds.phases["cold dyld3"]) },
            residentAfterEviction: rounds.cold.map { _ in rounds.resident }, pageIn: pageIn,
            objc: configuration.objc.map { _ in ObjCShare(writes: closure.objc.totalWrites, dyld2Phases: dyld2Phases, dyld3Phases: dyld3Phases) },
            codeSigning: codeSigning)
    }

    /// Each phase's median, by phase name.
    private func medians(_ samples: [String: [Int64]]?) -> [String: Int64] { (samples ?? [:]).mapValues { Distribution($0).median } }

    /// One launch of `path`, timed as the path times itself, and unmapped again. The floor
    /// reads ahead only when `cold`: warm, the advice would be work it can do without.
    private func launch(_ path: LaunchPath, closurePath: String, floor: MappingFloor,
                        sessions: [LaunchPath: GlibcHarness.Session], cold: Bool) async throws -> (nanoseconds: Int64, phases: LaunchReport.PhaseTimings) {
        switch path {
        case .dyld2:
            let slow = try SlowPath.launch(options).released()
            return (slow.timings[.total] ?? 0, slow.timings)
        case .dyld3:
            let fast = try FastPath.launch(closurePath: closurePath, request: options).released()
            return (fast.timings[.total] ?? 0, fast.timings)
        case .floor, .floorProtected:
            return (try floor.sample(readAhead: cold, protections: path == .floorProtected), LaunchReport.PhaseTimings())
        case .glibc, .glibcOneDir:
            guard let session = sessions[path] else { throw CommandFailure.failed("no glibc harness for \(path.label)") }
            return (try await session.load(), LaunchReport.PhaseTimings())
        }
    }

    /// (e): builds and writes the closure `runs` times, as `dyld3 install` does; returns
    /// the times and the closure as read back.
    private func buildClosure(at path: String, runs: Int) throws -> (Distribution, LaunchClosure) {
        try cache.prepareForWriting()
        let times = try (0..<runs).map { _ in try timed { try options.writeClosure(to: path) }.nanoseconds }
        return (Distribution(times), try ClosureFile.read(path))
    }

    /// The images' own fixup and export metadata: what the closure replaces.
    private func imageMetadataBytes(_ closure: LaunchClosure) throws -> Int {
        var total = 0
        for image in closure.images {
            let parsed = try ImageFile.load(path: image.path, arch: configuration.arch).image
            if let info = parsed.dyldInfo {
                total += Int(info.rebase.dataSize) + Int(info.bind.dataSize) + Int(info.weakBind.dataSize) + Int(info.lazyBind.dataSize) + Int(info.export.dataSize)
            }
            total += Int(parsed.chainedFixups?.dataSize ?? 0) + Int(parsed.exportsTrie?.dataSize ?? 0)
        }
        return total
    }

    /// One untimed launch per path, reading what it left privately dirty before unmapping.
    private func pagesDirtied(closurePath: String, floor: MappingFloor,
                              sessions: [LaunchPath: GlibcHarness.Session]) async throws -> [String: Int] {
        func dirty(_ memory: LaunchMemory) -> Int {
            defer { memory.release() }
            return ProcessMemory.privateDirtyPages(memory)
        }
        var pages = [
            LaunchPath.dyld2.rawValue: dirty(try SlowPath.launch(options).memory),
            LaunchPath.dyld3.rawValue: dirty(try FastPath.launch(closurePath: closurePath, request: options).memory),
            LaunchPath.floor.rawValue: dirty(try floor.launch(readAhead: false, protections: false).memory),
            LaunchPath.floorProtected.rawValue: dirty(try floor.launch(readAhead: false, protections: true).memory),
        ]
        for (path, session) in sessions { pages[path.rawValue] = try await session.dirtyPages() }
        return pages
    }
}
