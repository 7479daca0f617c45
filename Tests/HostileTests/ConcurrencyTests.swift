import Foundation
import ClosureCache
import ProcessRunner
import TestSupport
import Testing
import ClosureFormat

/// Installs racing launches and each other, and installs killed mid-flight, through the
/// built `dyld3` binary: no launch ever reads a torn closure.
@Suite(.serialized, .bounded) struct ConcurrencyTests {
    static let writers = 16
    static let readers = 16

    @Test(arguments: [false, true])
    func installsRacingLaunches(cacheHoldsAClosure: Bool) async throws {
        let app = try FixtureApp.named("init-order")
        let expected = try app.expectedResult
        let cache = try Scratch.directory("race")
        defer { Scratch.remove(cache) }
        if cacheHoldsAClosure { try app.install(into: cache, contentOnly: true) }
        let install = ["install", app.bundle, "--root", app.root, "--cache", cache]
        let launch = ["launch", app.bundle, "--root", app.root, "--cache", cache, "--mode", "auto", "--json"]
        // Interleave the starts so installs and launches overlap: all of them run at once.
        var installResults: [Dyld3Binary.Result] = []
        var launchResults: [Dyld3Binary.Result] = []
        try await withThrowingTaskGroup(of: (isInstall: Bool, result: Dyld3Binary.Result).self) { group in
            for index in 0..<max(Self.writers, Self.readers) {
                if index < Self.writers { group.addTask { (true, try await Dyld3Binary.run(install)) } }
                if index < Self.readers { group.addTask { (false, try await Dyld3Binary.run(launch)) } }
            }
            for try await (isInstall, result) in group {
                if isInstall { installResults.append(result) } else { launchResults.append(result) }
            }
        }
        for result in installResults {
            #expect(result.status == 0, "install: \(result.stderr)")
        }
        var fromClosure = 0
        for result in launchResults {
            #expect(result.status == 0, "launch: \(result.stderr)")
            let report = try #require(result.json, "launch printed no JSON: \(result.stdout) \(result.stderr)")
            #expect((report["result"] as? NSNumber)?.int32Value == expected)
            if let reason = report["fallback_reason"] as? String {
                // Before the first rename there is no closure; after it, always a whole one.
                #expect(reason.hasPrefix("missing: ") && !cacheHoldsAClosure, "torn or refused closure: \(reason)")
            } else {
                #expect(report["mode"] as? String == "dyld3")
                fromClosure += 1
            }
        }
        if cacheHoldsAClosure { #expect(fromClosure == Self.readers) }
        let entries = try FileManager.default.contentsOfDirectory(atPath: cache)
        #expect(entries.count == 1 && entries[0].hasSuffix(".\(ClosureCache.fileExtension)"), "\(entries)")
        let verify = try await Dyld3Binary.run(["verify", "--cache", cache])
        #expect(verify.status == 0, "\(verify.stdout)")
        #expect(verify.stdout.contains("verify: 1 closures, 1 valid, 0 corrupt, 0 stale"))
        print("concurrency: \(Self.writers) installs and \(Self.readers) auto launches (\(fromClosure) from the closure), 0 torn reads")
    }

    /// A 100-framework app: its install takes long enough to be killed at many points.
    static func bigApp() throws -> (bundle: String, root: String) {
        for directory in ["build/demo-gen100", "build/bench-apps/100-x86_64-chained"] {
            let base = Paths.repoRoot.appendingPathComponent(directory).path
            if FileManager.default.fileExists(atPath: base + "/gen100.app/gen100") { return (base + "/gen100.app", base + "/root") }
        }
        throw FixtureError("no generated 100-framework app: run tools/gen-app --preset 100 --seed 1 --out build/demo-gen100 (make demo does)")
    }

    @Test func installKilledMidWriteLeavesThePreviousClosure() async throws {
        let (bundle, root) = try Self.bigApp()
        let cache = try Scratch.directory("kill")
        let reference = try Scratch.directory("kill-reference")
        defer { Scratch.remove(cache); Scratch.remove(reference) }
        // The previous closure is content-only; the killed install writes a full-identity one:
        // after a kill the file must be exactly one of the two.
        let old = try await Dyld3Binary.run(["install", bundle, "--root", root, "--cache", cache, "--content-only"])
        #expect(old.status == 0, "\(old.stderr)")
        let fresh = try await Dyld3Binary.run(["install", bundle, "--root", root, "--cache", reference])
        #expect(fresh.status == 0, "\(fresh.stderr)")
        let name = try #require(try FileManager.default.contentsOfDirectory(atPath: cache).first)
        let path = cache + "/" + name
        let oldBytes = try Data(contentsOf: URL(fileURLWithPath: path))
        let newBytes = try Data(contentsOf: URL(fileURLWithPath: reference + "/" + name))
        #expect(oldBytes != newBytes)
        var kept = 0, replaced = 0
        for delay in stride(from: 0.02, through: 0.6, by: 0.04) {
            _ = try await Dyld3Binary.run(["install", bundle, "--root", root, "--cache", cache]) { install in
                try await Task.sleep(for: .seconds(delay))
                install.kill()
            }
            let now = try Data(contentsOf: URL(fileURLWithPath: path))
            #expect(now == oldBytes || now == newBytes, "a kill after \(delay) s left a mixed closure")
            if now == oldBytes { kept += 1 } else { replaced += 1 }
            let verify = try await Dyld3Binary.run(["verify", "--cache", cache])
            #expect(verify.status == 0, "after a kill at \(delay) s: \(verify.stdout)")
            if now != oldBytes {
                // Put the previous closure back for the next round.
                let restore = try await Dyld3Binary.run(["install", bundle, "--root", root, "--cache", cache, "--content-only"])
                #expect(restore.status == 0)
            }
        }
        #expect(kept + replaced == 15)
        print("kill: 15 installs killed with SIGKILL after 20-580 ms: \(kept) left the previous closure, \(replaced) had already renamed the new one, 0 mixed")
    }

    /// A temporary file abandoned by a killed writer is never read as a closure, and the next
    /// install removes it; a live writer's temporary file is left alone.
    @Test func abandonedTemporaryFilesAreIgnoredThenRemoved() async throws {
        let app = try FixtureApp.named("init-order")
        let cache = try Scratch.directory("abandoned")
        defer { Scratch.remove(cache) }
        let path = try app.install(into: cache)
        let name = (path as NSString).lastPathComponent
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        let dead = try await ProcessRunner.run("/bin/true", [])
        let abandoned = "\(cache)/.\(name).tmp.\(dead.processIdentifier).12345"
        let live = "\(cache)/.\(name).tmp.\(ProcessInfo.processInfo.processIdentifier).67890"
        for temporary in [abandoned, live] {
            #expect(FileManager.default.createFile(atPath: temporary, contents: bytes.prefix(bytes.count / 2), attributes: [.posixPermissions: 0o600]))
        }
        let verify = try await Dyld3Binary.run(["verify", "--cache", cache])
        #expect(verify.status == 0 && verify.stdout.contains("verify: 1 closures, 1 valid"), "\(verify.stdout)")
        let launch = try await Dyld3Binary.launchAuto(app, cache: cache)
        #expect(launch.json?["mode"] as? String == "dyld3")
        let install = try await Dyld3Binary.run(["install", app.bundle, "--root", app.root, "--cache", cache])
        #expect(install.status == 0)
        #expect(!FileManager.default.fileExists(atPath: abandoned))
        #expect(FileManager.default.fileExists(atPath: live))
    }
}
