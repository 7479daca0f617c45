import Dyld2
import Foundation
import ClosureCache
import LoaderCore
import Testing
import TestSupport
import ClosureFormat

extension ClosureTests {
    /// `dyld3 launch --stats --json`: the pre-main breakdown is complete and consistent
    /// (phases and the rest add up to the pre-main total; shares are of that total), and its
    /// counts are the closure's (dyld3) or the slow path's own, run in this process (dyld2).
    /// Structure only: no time is compared with a bound.
    @Test(arguments: ClosureTests.launchable.filter { $0.arch == "x86_64" })
    func statsAreCompleteAndCountWhatTheLaunchDid(_ app: FixtureApp) async throws {
        let cache = try Scratch.directory("stats")
        defer { Scratch.remove(cache) }
        let closurePath = try app.install(into: cache)
        let closure = try ClosureFile.read(closurePath)
        let common = ["launch", app.bundle, "--root", app.root, "--cache", cache, "--no-run", "--stats"]

        let dyld3 = try await Dyld3Binary.run(common + ["--mode", "dyld3", "--json"])
        #expect(dyld3.status == 0, "\(dyld3.stderr)")
        let fast = try statistics(dyld3, app: app)
        #expect(fast.int("images") == closure.images.count)
        #expect(fast.int("rebases") == closure.totalRebases && fast.int("binds") == closure.totalBinds)
        #expect(fast.int("fixups") == closure.totalRebases + closure.totalBinds)
        #expect(fast.int("symbol_lookups") == 0)
        let objcPhase = closure.objc.bindRuns.isEmpty ? [] : ["objc"]
        #expect(fast.phaseNames == ["closure", "mapping", "bind"] + objcPhase, "\(fast.phaseNames)")
        #expect(fast.object["closure"] as? String == closurePath)
        let size = try FileManager.default.attributesOfItem(atPath: closurePath)[.size] as? Int
        #expect(fast.int("closure_bytes") == size)
        let hashed = try #require(fast.int("images_hashed"))
        #expect(hashed >= 0 && hashed <= closure.images.count)
        #expect(fast.object["identities_hashed"] as? Bool == (hashed > 0))

        let hashing = try await Dyld3Binary.run(common + ["--mode", "dyld3", "--json", "--hash-images"])
        let everyImage = try statistics(hashing, app: app)
        #expect(everyImage.int("images_hashed") == closure.images.count && everyImage.object["identities_hashed"] as? Bool == true)

        let dyld2 = try await Dyld3Binary.run(common + ["--mode", "dyld2", "--json"])
        #expect(dyld2.status == 0, "\(dyld2.stderr)")
        let slow = try statistics(dyld2, app: app)
        let inProcess = try SlowPath.launch(LaunchOptions(roots: [app.executable], arch: app.arch, root: app.root, run: false))
        inProcess.memory.release()
        #expect(slow.int("images") == inProcess.report.images.count)
        #expect(slow.int("rebases") == inProcess.report.rebases && slow.int("binds") == inProcess.report.binds)
        #expect(slow.int("symbol_lookups") == inProcess.report.symbolLookups)
        #expect(slow.phaseNames == ["path_resolution", "parsing", "mapping", "rebase", "bind"] + objcPhase, "\(slow.phaseNames)")
        #expect(slow.object["closure_bytes"] is NSNull && slow.object["images_hashed"] is NSNull)
        // Whether the Objective-C step ran: the launch's own report, and the closure's record.
        #expect(slow.object["objc_ran"] as? Bool == (inProcess.report.objcSkipped?.description == nil))
        #expect(slow.object["objc_skipped_reason"] as? String == inProcess.report.objcSkipped?.description)
        #expect(fast.object["objc_ran"] as? Bool == !closure.objc.bindRuns.isEmpty)
        #expect((fast.object["objc_skipped_reason"] is NSNull) == !closure.objc.bindRuns.isEmpty)
        #expect((inProcess.report.objcSkipped?.description == nil) == !closure.objc.bindRuns.isEmpty, "\(app)")

        // The text view names the same figures, one line per phase.
        let text = try await Dyld3Binary.run(common + ["--mode", "dyld3"])
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.lines.contains("dyld3 pre-main statistics"))
        for label in ["total pre-main time:", "closure:", "mapping:", "bind:", "other:", "images:", "fixups:", "identities hashed:", "objective-c:"] {
            #expect(text.lines.contains { $0.trimmingCharacters(in: .whitespaces).hasPrefix(label) }, "no \(label) in \(text.stdout)")
        }
        #expect(text.lines.contains("  images:                \(closure.images.count)"))
    }

    /// The "stats" object of a `--json` launch report, checked for the fields every launch has.
    func statistics(_ run: Dyld3Binary.Result, app: FixtureApp) throws -> Statistics {
        let stats = try #require(run.json?["stats"] as? [String: Any], "\(app): no stats in \(run.stdout)")
        let statistics = Statistics(object: stats)
        let total = try #require(statistics.int("pre_main_ns"))
        let phases = try #require(stats["phases"] as? [[String: Any]])
        let times = phases.compactMap { ($0["ns"] as? NSNumber)?.int64Value }
        #expect(times.count == phases.count && times.allSatisfy { $0 >= 0 })
        let other = try #require((stats["other_ns"] as? NSNumber)?.int64Value)
        #expect(times.reduce(0, +) <= Int64(total), "\(app): phases \(times) exceed the pre-main total \(total)")
        #expect(times.reduce(0, +) + other == Int64(total), "\(app): phases and the rest make the total")
        let shares = phases.compactMap { ($0["share_basis_points"] as? NSNumber)?.int64Value }
        #expect(shares.count == phases.count && shares.reduce(0, +) <= 10_000 + Int64(phases.count))
        #expect(statistics.int("fixups") == (statistics.int("rebases") ?? -1) + (statistics.int("binds") ?? -1))
        return statistics
    }

    struct Statistics {
        let object: [String: Any]
        func int(_ key: String) -> Int? { (object[key] as? NSNumber)?.intValue }
        var phaseNames: [String] { (object["phases"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String } }
    }
}
