import ClosureBuild
import Foundation
@testable import LaunchBench
import ClosureCache
import Dyld3
import LoaderCore
import Testing
import TestSupport
import ClosureFormat
import LaunchMemory

/// The page-in bench's private-page counts (docs/page-in.md "Private pages"): counts only,
/// never timings. The oracle is the eager launch of the same closure, read from
/// `/proc/self/smaps` by the same measure, and the number of pages touched.
@Suite(.bounded) struct PageInBenchTests {
    /// With fault-around off every touch fills exactly its page; with it on, a touch fills
    /// at most that many pages, every filled page is counted private, and the faults are no
    /// more than the pages touched.
    @Test(arguments: [1, 4])
    func privatePagesCountThePagesTheFixupsMade(faultAround: Int) async throws {
        let configuration = BenchConfiguration(dylibCounts: [10], runs: 1,
                                               repositoryRoot: BenchTests.repository, toolPath: nil, cold: false)
        let app = try await BenchApp.prepare(dylibs: 10, configuration: configuration) { _ in }
        let closure = try ClosureBuilder.build(roots: [app.mainImage], arch: configuration.arch, root: app.systemRoot)
        let plan = try PageInFixups.plan(closure, pageSize: LaunchMemory.pageSize)
        // Every image of the generated app has a page index, so nothing is linked eagerly
        // inside the page-in launch and its region starts with no private page at all.
        try #require(plan.indexed.allSatisfy { $0 }, "an image of gen10 has no page index")
        var options = LaunchOptions(roots: [app.mainImage], arch: configuration.arch, root: app.systemRoot, run: false)
        options.faultAround = faultAround
        let result = try PageInBench.measure(closure, closurePath: "(built in memory)", options: options, runs: 1)
        let pages = result.privatePages
        let eager = try #require(pages["eager"])
        // Besides fixups, both launches write the host services table (our libSystem's) and
        // the thread-local descriptors: the pages of those writes that hold no fixup are
        // made private at launch by either.
        var written = Set<String>()
        let records = closure.threadLocals
        let slots = records.setups.flatMap { setup in setup.descriptors.map { (setup.image, $0) } }
            + [records.hostServices.map { ($0.image, $0.vmOffset) }].compactMap { $0 }
        for (image, offset) in slots {
            let indexed = try closure.images[image].fixupPageIndex.pages(path: "gen10").pages.map(\.page)
            let page = offset / LaunchMemory.pageSize
            if !indexed.contains(page) { written.insert("\(image):\(page)") }
        }
        let extra = written.count
        // The eager launch writes its fixups into exactly the indexed pages: each becomes a
        // private copy-on-write page.
        #expect(eager == result.fixupPages + extra && eager > extra, "eager private pages \(eager), indexed pages \(result.fixupPages), others written \(extra)")
        if let reason = result.fallbackReason {
            // No userfaultfd here: the "page-in" launches were eager.
            for level in ["launch", "10", "50", "100"] { #expect(pages[level] == eager, "\(level) (fallback: \(reason))") }
            return
        }
        // Untouched, a page-in launch has made no fixup page private.
        #expect(pages["launch"] == extra && result.faults["launch"] == 0, "\(pages)")
        for level in PageInResult.touchLevels {
            let touched = (result.fixupPages * level + 99) / 100
            let filled = try #require(result.pagesFilled["\(level)"]), faults = try #require(result.faults["\(level)"])
            // Every page filled is a private page, and nothing else is.
            #expect(pages["\(level)"] == filled + extra, "after touching \(level)%: \(pages), filled \(result.pagesFilled)")
            if faultAround == 1 {
                // One page per fault: exactly the pages touched.
                #expect(filled == touched && faults == touched, "after touching \(level)%: filled \(filled), faults \(faults)")
            } else {
                #expect(filled >= touched && faults <= touched && filled <= faults * faultAround,
                        "after touching \(level)%: touched \(touched), filled \(filled), faults \(faults)")
            }
        }
        #expect(pages["100"] == eager, "\(pages)")
    }
}
