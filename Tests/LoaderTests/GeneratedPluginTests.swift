import ClosureBuild
import Dyld2
import Dyld3
import Foundation
import LaunchComparison
import LoaderCore
import ProcessRunner
import RuntimeServices
import TestSupport
import Testing

/// A generated app whose frameworks only a bundle links (`tools/gen-app --plugin`): the
/// launch maps main and libSystem, main's `dlopen` of the bundle loads it and every
/// framework, and the sum main returns through `dlsym` is the one the generator computed
/// from dyld's rules, weak definitions coalesced in the order that `dlopen` loaded them.
@Suite(.bounded) struct GeneratedPluginTests {
    /// Two layers: the bundle links the top one, the lower ones load as their dependencies.
    static let frameworks = 10

    /// Generates the app into a scratch directory laid out as a fixture variant.
    static func generate() async throws -> FixtureApp {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("dyld3-gen-plugin-\(UUID().uuidString)")
        let variant = "x86_64-chained"
        let generated = try await ProcessRunner.run(Paths.repoRoot.appendingPathComponent("tools/gen-app").path, [
            "--dylibs", "\(frameworks)", "--seed", "4", "--plugin", "--out", scratch.appendingPathComponent(variant).path,
        ])
        try #require(generated.succeeded, "\(generated.error)")
        let name = "gen\(frameworks)"
        let manifest = try Data(contentsOf: scratch.appendingPathComponent("\(variant)/\(name).app/manifest.json"))
        return try FixtureApp(name: name, variant: variant, directory: scratch, manifest: manifest)
    }

    /// The launch holds main and libSystem only, runs no initializer, and its one `dlopen`
    /// added the bundle and then every framework, initializing them in the model's order.
    static func check(_ report: LaunchReport, _ app: FixtureApp, expected: Int32, via: String) throws {
        let dlopen = try #require(app.dlopen)
        #expect(report.result == expected, "\(via)")
        #expect(report.images.count == 2, "\(via): \(report.images)")
        #expect(report.initializers.isEmpty, "\(via): \(report.initializers)")
        #expect(report.dynamicLoads.count == 1, "\(via): \(report.dynamicLoads)")
        guard let load = report.dynamicLoads.first else { return }
        let frameworks = (1...frameworks).map { String(format: "Fw%04d", $0) }
        let loaded = load.loaded.map(app.imageName)
        #expect(load.requested == dlopen.path && load.via == via)
        #expect(loaded.first == dlopen.image && loaded.dropFirst().sorted() == frameworks, "\(via): \(loaded)")
        #expect(load.initialized.map(app.imageName) == dlopen.initOrder, "\(via)")
    }

    @Test func bothPathsReturnTheGeneratorsResultThroughTheDlopenedBundle() async throws {
        let app = try await Self.generate()
        defer { try? FileManager.default.removeItem(at: app.directory) }
        guard case let .result(expected, initOrder) = app.expectation else { Issue.record("the generated app must launch"); return }
        #expect(initOrder == [])
        let dlopen = try #require(app.dlopen)
        #expect(dlopen.path == "@executable_path/PlugIns/Plugin.bundle/Plugin" && dlopen.image == "Plugin")
        #expect(dlopen.initOrder.sorted() == (1...Self.frameworks).map { String(format: "Fw%04d", $0) })
        let request = LaunchOptions(roots: [app.executable], arch: app.arch, root: app.root)

        let slow = try SlowPath.launch(request)
        try Self.check(slow.report, app, expected: expected, via: "dyld2")
        slow.memory.release()

        let cache = app.directory.appendingPathComponent("closures").path
        let installed = try FastPath.launch(closurePath: try app.install(into: cache), request: request)
        try Self.check(installed.report, app, expected: expected, via: "closure")
        installed.memory.release()

        let bare = app.directory.appendingPathComponent("bare-closures").path
        let runtime = try FastPath.launch(closurePath: try app.install(into: bare, dlopenClosures: false), request: request,
                                          configuration: LaunchConfiguration(dlopenClosures: DlopenClosureBuilder.resolve))
        try Self.check(runtime.report, app, expected: expected, via: "runtime closure")
        runtime.memory.release()

        let comparison = try LaunchComparison.run(options: request, closure: try app.closure(), closurePath: "(built in memory)",
                                                  configuration: LaunchConfiguration(dlopenClosures: DlopenClosureBuilder.resolve),
                                                  dlopen: [dlopen.path])
        #expect(comparison.differences.isEmpty, "\(comparison.differences.prefix(3))")
        #expect(comparison.images == 2 + 1 + Self.frameworks)
        #expect(comparison.dyld2Result == expected && comparison.dyld3Result == expected)
    }
}
