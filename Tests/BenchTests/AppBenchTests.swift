import Foundation
import ProcessRunner
import Testing
import TestSupport

/// `dyld3 bench APP` as a user types it, on a generated app whose lower frameworks are the
/// root's (so every path, the shared cache's too, can launch it): the report's counts against
/// dyld2's own launch, its initializers against the generator's model, `--baseline` failing
/// with exit 6 on growth. Structure and counts only: no timing is asserted.
@Suite(.serialized, .bounded) struct AppBenchTests {
    @Test func anAppIsMeasuredEveryWayAndABaselineCatchesGrowth() async throws {
        let directory = NSTemporaryDirectory() + "app-bench-test-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let generated = try await ProcessRunner.run(BenchTests.repository + "/tools/gen-app",
                                                    ["--dylibs", "12", "--system", "8", "--seed", "2", "--out", directory])
        try #require(generated.status == 0, "\(generated.error)")
        let app = directory + "/gen12.app", root = directory + "/root"
        let built = try await Dyld3Binary.run(["shared-cache", "build", "--root", root], limitSeconds: 120)
        try #require(built.status == 0, "\(built.stderr)")
        let environment = ["DYLD3_CACHE=" + directory + "/closures"]
        let out = directory + "/report"
        let benched = try await Dyld3Binary.run(["bench", app, "--root", root, "--runs", "2", "--json", "--out", out], limitSeconds: 300,
                                                environment: environment)
        try #require(benched.status == 0, "\(benched.stderr)")
        let report = try jsonObject(benched.stdout)
        #expect(report["schema_version"] as? Int == 1 && report["target_page_size"] as? Int == 4096)

        // The Markdown beside it: every table fits 100 columns; the phases add up to each path's total.
        let markdown = try String(contentsOfFile: out + "/app.md", encoding: .utf8)
        #expect(ChartTests.wideTableLines(markdown).isEmpty && markdown.contains("| other |") && markdown.contains("| total |"),
                "\(ChartTests.wideTableLines(markdown).prefix(3))")

        // Every path, two samples each.
        let warm = try #require(report["warm_ns"] as? [String: [String: Any]])
        #expect(Set(warm.keys) == ["dyld2", "dyld3", "prelinked", "dyld3_shared_cache"], "\(warm.keys) \(report["notes"] ?? "")")
        for (path, samples) in warm { #expect((samples["samples"] as? [Int])?.count == 2, "\(path)") }

        // The counts are dyld2's, launched on its own from the files.
        let slow = try jsonObject(try await Dyld3Binary.run(["launch", app, "--root", root, "--mode", "dyld2", "--shared-cache", "none", "--json"], limitSeconds: 120,
                                                           environment: environment).stdout)
        let stats = try #require(slow["stats"] as? [String: Any])
        #expect(report["images"] as? Int == (slow["images"] as? [String])?.count)
        #expect((report["rebases"] as? Int).map { $0 + (report["binds"] as? Int ?? 0) } == (stats["fixups"] as? Int), "\(stats)")
        let costs = try #require(report["images_by_cost"] as? [[String: Any]])
        #expect(costs.count == report["images"] as? Int)
        let fixups = costs.compactMap { $0["fixups"] as? Int }
        #expect(fixups == fixups.sorted(by: >) && fixups.reduce(0, +) == stats["fixups"] as? Int)

        // The initializers by name, in the generator's order.
        let manifest = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: app + "/manifest.json"))) as? [String: Any])
        let expected = try #require((manifest["expect"] as? [String: Any])?["initOrder"] as? [String])
        let named = try #require(report["initializers"] as? [String])
        #expect(named.map { String($0.prefix { $0 != ":" }) } == expected && named.allSatisfy { $0.contains("_initializer") }, "\(named)")

        // A baseline with fewer images and fixups: the report grew past it, exit 6 naming what.
        var smaller = report
        smaller["images"] = (report["images"] as? Int ?? 0) - 2
        let baseline = directory + "/baseline.json"
        try JSONSerialization.data(withJSONObject: smaller).write(to: URL(fileURLWithPath: baseline))
        let grown = try await Dyld3Binary.run(["bench", app, "--root", root, "--runs", "1", "--out", out, "--baseline", baseline, "--tolerance", "0.05"],
                                              limitSeconds: 300, environment: environment)
        #expect(grown.status == 6 && grown.stderr.contains("images:"), "\(grown.status) \(grown.stderr)")
        let same = try await Dyld3Binary.run(["bench", app, "--root", root, "--runs", "1", "--out", out, "--baseline", out + "/app.json", "--tolerance", "10"],
                                             limitSeconds: 300, environment: environment)
        #expect(same.status == 0, "\(same.stderr)")
    }

    @Test func aRealModuleWithoutARootGetsAStubRootSaidSo() async throws {
        let module = try #require(try Corpus.machOFiles().first { $0.hasSuffix("_imaging.cpython-311-darwin.so") }, "no pillow module in the corpus")
        let directory = NSTemporaryDirectory() + "app-bench-stub-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let benched = try await Dyld3Binary.run(["bench", module, "--runs", "1", "--json", "--out", directory + "/out"], limitSeconds: 300,
                                                environment: ["DYLD3_CACHE=" + directory + "/closures"])
        try #require(benched.status == 0, "\(benched.stderr)")
        let report = try jsonObject(benched.stdout)
        let notes = try #require(report["notes"] as? [String])
        #expect(notes.contains { $0.hasPrefix("root: a stub root made for the bench") } && notes.contains { $0.contains("no path runs the app's code") })
        #expect(report["arch"] as? String == "arm64" && report["target_page_size"] as? Int == 16384)
        #expect((report["warm_ns"] as? [String: Any])?["dyld3"] != nil)
    }
}
