import ClosureBuild
import Dyld2
import Dyld3
import Foundation
import LaunchClosure
import LoaderCore
import MachOReader

/// The measurements of one app size: setup (apps, closure, page list, harness) outside
/// any timed region, then the four launch paths round-robin, warm then fresh.
struct SizeBench {
    let configuration: BenchConfiguration
    let app: BenchApp
    let harness: GlibcHarness
    let cache: ClosureCache
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
        let elf = try app.elfRelocationCount()
        let fixups = closure.totalRebases + closure.totalBinds

        // One harness for the page counts and every warm round: its loads interleave with
        // the in-process launches exactly as before (the harness times its own dlopen).
        let (warmRounds, _) = try await harness.withSession(app: app, stderrPath: stderrPath) { session in
            let dirtied = try await pagesDirtied(closurePath: closurePath, floor: floor, session: session)
            log("  warm: \(runs) rounds of dyld2, dyld3, floor, glibc")
            var rounds = WarmRounds(dirtied: dirtied)
            for round in 0...runs {
                let slow = try SlowPath.launch(options)
                slow.memory.release()
                let fast = try FastPath.launch(closurePath: closurePath, request: options)
                fast.memory.release()
                let mapped = try floor.launch()
                mapped.memory.release()
                let glibc = try await session.load()
                guard round > 0 else { continue }  // round 0 warms caches and is discarded
                rounds.samples[.dyld2, default: []].append(slow.report.timings[.total] ?? 0)
                rounds.samples[.dyld3, default: []].append(fast.report.timings[.total] ?? 0)
                rounds.samples[.floor, default: []].append(mapped.nanoseconds)
                rounds.samples[.glibc, default: []].append(glibc)
                for (phase, time) in fast.report.timings { rounds.dyld3Phases[phase.rawValue, default: []].append(time) }
                for (phase, time) in slow.report.timings { rounds.dyld2Phases[phase.rawValue, default: []].append(time) }
            }
            return rounds
        }
        let (dirtied, warm) = (warmRounds.dirtied, warmRounds.samples)
        let (dyld3Phases, dyld2Phases) = (warmRounds.dyld3Phases, warmRounds.dyld2Phases)

        var fresh: [String: Distribution] = [:], freshRSS: [String: Distribution] = [:]
        if let tool = configuration.toolPath {
            log("  fresh: \(runs) rounds of dyld2, dyld3, glibc, one process each")
            let (times, rss) = try await freshProcesses(tool: tool, runs: runs)
            fresh = times.mapValues(Distribution.init)
            freshRSS = rss.mapValues(Distribution.init)
        }

        let warmDistributions = Dictionary(uniqueKeysWithValues: warm.map { ($0.key.rawValue, Distribution($0.value)) })
        var perFixup: [String: Double] = [:]
        for (path, distribution) in warmDistributions {
            let count = path == LaunchPath.glibc.rawValue ? elf.relocations : fixups
            perFixup[path] = count > 0 ? Double(distribution.median) / Double(count) : 0
        }
        return SizeResult(
            dylibs: app.dylibs, images: closure.images.count, fixups: fixups,
            rebases: closure.totalRebases, binds: closure.totalBinds, elfRelocations: elf.relocations,
            fixupPages: floor.pageCount, warm: warmDistributions, fresh: fresh, freshMaxRSSKilobytes: freshRSS,
            dyld3Phases: dyld3Phases.mapValues { Distribution($0).median },
            dyld2Phases: dyld2Phases.mapValues { Distribution($0).median },
            nanosecondsPerFixup: perFixup, pagesDirtied: dirtied,
            benchMaxRSSKilobytes: ProcessMemory.maxRSSKilobytes(),
            closure: ClosureCost(
                build: build, fileBytes: fileBytes,
                bytesPerFixup: fixups > 0 ? Double(fileBytes) / Double(fixups) : 0,
                imageMetadataBytes: metadata,
                relativeToMetadata: metadata > 0 ? Double(fileBytes) / Double(metadata) : 0))
    }

    /// (e): builds and writes the closure `runs` times, as `dyld3 install` does; returns
    /// the times and the closure as read back.
    private func buildClosure(at path: String, runs: Int) throws -> (Distribution, LaunchClosure) {
        try cache.prepareForWriting()
        var times: [Int64] = []
        let clock = ContinuousClock()
        for _ in 0..<runs {
            let start = clock.now
            let closure = try ClosureBuilder.build(roots: options.roots, arch: configuration.arch, root: app.systemRoot)
            try ClosureFile.write(closure, to: path)
            times.append((clock.now - start).nanoseconds)
        }
        return (Distribution(times), try ClosureFile.read(path))
    }

    /// The images' own fixup and export metadata: what the closure replaces.
    private func imageMetadataBytes(_ closure: LaunchClosure) throws -> Int {
        var total = 0
        for image in closure.images {
            let parsed = try ImageFile.load(path: image.path, arch: configuration.arch).image
            if let info = parsed.dyldInfo {
                total += Int(info.rebaseSize) + Int(info.bindSize) + Int(info.weakBindSize) + Int(info.lazyBindSize) + Int(info.exportSize)
            }
            total += Int(parsed.chainedFixups?.dataSize ?? 0) + Int(parsed.exportsTrie?.dataSize ?? 0)
        }
        return total
    }

    /// One untimed launch per path, reading what it left privately dirty before unmapping.
    private func pagesDirtied(closurePath: String, floor: MappingFloor, session: GlibcHarness.Session) async throws -> [String: Int] {
        func dirty(_ memory: LaunchMemory) -> Int {
            defer { memory.release() }
            return ProcessMemory.privateDirtyPages(start: memory.regionBase, size: memory.regionSize)
        }
        return [
            LaunchPath.dyld2.rawValue: dirty(try SlowPath.launch(options).memory),
            LaunchPath.dyld3.rawValue: dirty(try FastPath.launch(closurePath: closurePath, request: options).memory),
            LaunchPath.floor.rawValue: dirty(try floor.launch().memory),
            LaunchPath.glibc.rawValue: try await session.dirtyPages(),
        ]
    }

    /// Each sample a new process: `dyld3 launch --no-run --json` (its in-process total) for
    /// dyld2 and dyld3, a one-shot harness for glibc. Also each process's peak RSS.
    private func freshProcesses(tool: String, runs: Int) async throws -> (times: [String: [Int64]], rss: [String: [Int64]]) {
        var times: [String: [Int64]] = [:], rss: [String: [Int64]] = [:]
        for _ in 0..<runs {
            for mode in [LaunchPath.dyld2, .dyld3] {
                let child = try await BenchTool.start(
                    [harness.executable, "--rss", tool, "launch", app.mainImage, "--mode", mode.rawValue, "--no-run", "--json", "--root", app.systemRoot,
                     "--cache", cache.directory, "--arch", configuration.arch],
                    stderrPath: stderrPath)
                // The launch's JSON report, then the harness's "maxrss_kb N" line.
                let text = BenchTool.withoutFinalLineBreak(child.output)
                let status = child.status
                let marker = text.range(of: "\nmaxrss_kb ", options: .backwards)
                guard status == 0, let marker, let maxRSS = Int64(text[marker.upperBound...].prefix { $0.isNumber }),
                      case let json = text[..<marker.lowerBound],
                      let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any],
                      let timings = object["timings"] as? [String: Any], let total = (timings["total"] as? NSNumber)?.int64Value else {
                    throw BenchError.failed("\(child.command) failed (status \(status)): \(BenchTool.stderrText(stderrPath))")
                }
                times[mode.rawValue, default: []].append(total)
                rss[mode.rawValue, default: []].append(maxRSS)
            }
            let (load, maxRSS) = try await harness.withSession(app: app, stderrPath: stderrPath) { try await $0.load() }
            times[LaunchPath.glibc.rawValue, default: []].append(load)
            rss[LaunchPath.glibc.rawValue, default: []].append(Int64(maxRSS))
        }
        return (times, rss)
    }
}

/// What the warm rounds collect while the harness runs.
private struct WarmRounds: Sendable {
    var dirtied: [String: Int]
    var samples: [LaunchPath: [Int64]] = [:]
    var dyld3Phases: [String: [Int64]] = [:]
    var dyld2Phases: [String: [Int64]] = [:]
}
