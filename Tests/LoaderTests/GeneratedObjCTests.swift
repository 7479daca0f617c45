import ClosureBuild
import Dyld2
import Foundation
import LaunchComparison
import LoaderCore
import MachOReader
import ProcessRunner
import TestSupport
import Testing

/// An Objective-C app from `tools/gen-app --objc-classes` (classes subclassing other
/// frameworks' classes, categories on them, selectors shared by every image): dyld2 and
/// dyld3 leave identical memory, both return the result the generator computed from the
/// runtime's rules (Fixtures/generator/objcgen.py), and the runtime's class table holds as
/// many classes as the generator wrote.
@Suite(.bounded) struct GeneratedObjCTests {
    /// Generates into `out` an app of 12 frameworks (two layers, so subclasses and categories
    /// cross frameworks) with this much Objective-C (`tools/gen-app`), and returns its manifest.
    static func generate(into out: String, seed: Int, classes: Int, categories: Int, selectorReferences: Int) async throws -> [String: Any] {
        let generated = try await ProcessRunner.run(Paths.repoRoot.appendingPathComponent("tools/gen-app").path, [
            "--dylibs", "12", "--seed", "\(seed)", "--objc-classes", "\(classes)", "--objc-categories", "\(categories)",
            "--objc-selrefs", "\(selectorReferences)", "--out", out,
        ])
        try #require(generated.succeeded, "\(generated.error)")
        let manifest = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out + "/gen12.app/manifest.json")))
        return try #require(manifest as? [String: Any])
    }

    @Test func generatedObjCAppLaunchesAsTheGeneratorExpects() async throws {
        let out = NSTemporaryDirectory() + "gen-app-objc-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: out) }
        let object = try await Self.generate(into: out, seed: 3, classes: 3, categories: 2, selectorReferences: 6)
        let expected = try #require((object["expect"] as? [String: Any])?["result"] as? Int)
        let classes = try #require((object["objc"] as? [String: Any])?["classes"] as? Int)
        #expect(classes == 12 * 3)

        let executable = out + "/gen12.app/gen12"
        let options = LaunchOptions(roots: [executable], arch: "x86_64", root: out + "/root")
        let closure = try ClosureBuilder.build(roots: options.roots, arch: "x86_64", root: out + "/root")
        #expect(closure.objc.totalWrites > 0)
        let comparison = try LaunchComparison.run(options: options, closure: closure, closurePath: "generated objc closure")
        #expect(comparison.differences.isEmpty, "\(comparison.differences.prefix(3))")
        #expect(comparison.dyld2Result.map(Int.init) == expected)
        #expect(comparison.dyld3Result.map(Int.init) == expected)

        // The class count the step wrote into the runtime's header (+40).
        let launch = try SlowPath.launch(LaunchOptions(roots: [executable], arch: "x86_64", root: out + "/root", run: false))
        defer { launch.memory.release() }
        let runtime = try #require(launch.report.images.firstIndex { $0.hasSuffix("/usr/lib/libobjc.A.dylib") })
        let image = try MachOImage(parsing: Array(try Data(contentsOf: URL(fileURLWithPath: launch.report.images[runtime]))))
        let tables = try #require(ObjCSections.runtimeTables(in: image))
        let count = try launch.memory.objcAddressSpace().u64(at: launch.memory.images[runtime].base + tables.vmOffset + 40, what: "class count")
        #expect(count == UInt64(classes))
    }
}
