import ClosureBuild
import Foundation
@testable import LaunchBench
import LaunchClosure
import Dyld3
import LoaderCore
import Testing
import ClosureFormat

/// The page-in bench's private-page counts (docs/page-in.md "Private pages"): counts only,
/// never timings. The oracle is the eager launch of the same closure, read from
/// `/proc/self/smaps` by the same measure, and the number of pages touched.
@Suite struct PageInBenchTests {
    @Test func privatePagesCountThePagesTheFixupsMade() async throws {
        let configuration = BenchConfiguration(dylibCounts: [10], runs: 1, outputDirectory: NSTemporaryDirectory(),
                                               repositoryRoot: BenchTests.repository, toolPath: nil, cold: false)
        let app = try await BenchApp.prepare(dylibs: 10, configuration: configuration) { _ in }
        let closure = try ClosureBuilder.build(roots: [app.mainImage], arch: configuration.arch, root: app.systemRoot)
        let plan = try PageInFixups.plan(closure, pageSize: LaunchMemory.pageSize)
        // Every image of the generated app has a page index, so nothing is linked eagerly
        // inside the page-in launch and its region starts with no private page at all.
        try #require(plan.indexed.allSatisfy { $0 }, "an image of gen10 has no page index")
        let options = LaunchOptions(roots: [app.mainImage], arch: configuration.arch, root: app.systemRoot, run: false)
        let result = try PageInBench.measure(closure, closurePath: "(built in memory)", options: options, runs: 1)
        let pages = result.privatePages
        let eager = try #require(pages["eager"])
        // The eager launch writes its fixups into exactly the indexed pages: each becomes a
        // private copy-on-write page.
        #expect(eager == result.fixupPages && eager > 0, "eager private pages \(eager), indexed pages \(result.fixupPages)")
        if let reason = result.fallbackReason {
            // No userfaultfd here: the "page-in" launches were eager.
            for level in ["launch", "10", "50", "100"] { #expect(pages[level] == eager, "\(level) (fallback: \(reason))") }
            return
        }
        // Untouched, a page-in launch has made nothing private; each touch fills exactly the
        // page it touches (one page per fault), and touching every page ends where eager starts.
        #expect(pages["launch"] == 0, "\(pages)")
        for level in PageInResult.touchLevels {
            #expect(pages["\(level)"] == (result.fixupPages * level + 99) / 100, "after touching \(level)%: \(pages)")
        }
        #expect(pages["100"] == eager, "\(pages)")
    }
}
