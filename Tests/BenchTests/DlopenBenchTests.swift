import Foundation
@testable import LaunchBench
import Testing
import TestSupport

/// `dyld3 bench --dlopen`'s plugin measurement: each path's `dlopen` adds the bundle and the
/// frameworks `gen-app --plugin` made it link, and each dyld3 path goes the way it names
/// (the installed dlopen closure, one built at run time). No timing is checked.
@Suite(.bounded) struct DlopenBenchTests {
    @Test func eachPathOpensThePluginItNames() async throws {
        let out = NSTemporaryDirectory() + "dlopen-bench-test-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: out) }
        let configuration = BenchConfiguration(dylibCounts: [3], runs: 1, repositoryRoot: BenchTests.repository,
                                               toolPath: nil, cold: false)
        let app = try await BenchApp.prepareMachO(dylibs: 3, plugin: true, configuration: configuration) { _ in }
        let result = try await DlopenBench.measurePlugin(app, configuration: configuration) { _ in }
        // main and libSystem at launch; the bundle and its 3 frameworks added by the dlopen.
        #expect(result.launchImages == 2)
        #expect(result.added == 4)
        #expect(Set(result.warm.keys) == ["dyld2", "dyld3_prebuilt", "dyld3_runtime"])
        #expect(result.warm.values.allSatisfy { $0.samples.count == 1 && $0.median > 0 })
        let markdown = DlopenBench.markdown(DlopenBenchReport(runs: 1, apps: [], plugins: [result]))
        #expect(markdown.contains("| 4 |"))
    }
}
