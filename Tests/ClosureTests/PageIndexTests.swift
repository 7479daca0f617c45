@testable import ClosureCache
import TestSupport
import LoaderCore
import Testing
import LaunchPlan
@testable import ClosureFormat

/// The fixup page index (docs/closure-format.md, "Fixup page index"): each page's fixups,
/// decoded from its restart point alone, must be exactly the fixups the whole streams hold
/// at that page's locations.
extension ClosureTests {
    /// Locations at one stride that cross a page boundary inside one segment start a new run.
    @Test func runsStopAtPageBoundaries() throws {
        let fixups = [0x2ff0, 0x2ff8, 0x3000, 0x3008].map {
            ResolvedFixup(vmOffset: UInt64($0), kind: .rebase(targetOffset: 0x100, high8: 0))
        }
        let encoded = FixupRuns.encodeRebases(fixups, plan: Self.examplePlan)
        // 2 runs: 0x2ff0 ×2 stride 8, then 0x3000 (0x10 after 0x2ff8) ×2 stride 8.
        #expect(encoded.bytes == [0x02, 0xf0, 0x5f, 0x02, 0x08, 0x80, 0x02, 0x00, 0x08, 0x02, 0x08, 0x00, 0x00])
        let index = try FixupPageIndex.derive(rebaseRuns: encoded.bytes[...], bindRuns: [0]).pages(path: "pages")
        #expect(index.pageSize == 4096)
        #expect(index.pages == [
            FixupPage(page: 2, rebases: FixupRestart(runs: 1, offset: 1, location: 0, target: 0), binds: .none),
            FixupPage(page: 3, rebases: FixupRestart(runs: 1, offset: 8, location: 0x2ff8, target: 0x100), binds: .none),
        ])
    }

    /// The documented example's index, byte for byte (docs/closure-format.md).
    @Test func pageIndexMatchesTheDocumentedExample() throws {
        let rebases = [(0x1000, 0x500), (0x1008, 0x520), (0x1010, 0x540), (0x2000, 0x1000)].map { location, target in
            ResolvedFixup(vmOffset: UInt64(location), kind: .rebase(targetOffset: UInt64(target), high8: 0))
        }
        let binds = [(0x3000, BindTarget.absolute(1)), (0x3008, .absolute(2))].map { location, target in
            ResolvedFixup(vmOffset: UInt64(location), kind: .bind(target, addend: 0))
        }
        var targets: [BindTarget] = []
        var table: [BindTarget: Int] = [:]
        let rebaseRuns = FixupRuns.encodeRebases(rebases, plan: Self.examplePlan).bytes
        let bindRuns = FixupRuns.encodeBinds(binds, plan: Self.examplePlan, targets: &targets, targetIndex: &table).bytes
        let index = try FixupPageIndex.derive(rebaseRuns: rebaseRuns[...], bindRuns: bindRuns[...])
        #expect(index.bytes == [
            0x80, 0x20, 0x03,                   // page size 4096, 3 pages
            0x01, 0x01, 0x01, 0x00, 0x00, 0x00, // page 1: 1 rebase run at byte 1, from location 0, target 0; no binds
            0x00, 0x01, 0x09, 0x90, 0x20, 0xc0, 0x0a, 0x00, // page 2: 1 rebase run at byte 9, from 0x1010, target 0x540
            0x00, 0x00, 0x01, 0x01, 0x00,       // page 3: no rebases; 1 bind run at byte 1, from 0
        ])
    }

    /// A fixup whose 8 bytes straddle a page boundary leaves the image without an index.
    @Test func aFixupStraddlingPagesLeavesNoIndex() throws {
        let fixups = [ResolvedFixup(vmOffset: 0x2ffc, kind: .rebase(targetOffset: 0x100, high8: 0))]
        let encoded = FixupRuns.encodeRebases(fixups, plan: Self.examplePlan)
        let index = try FixupPageIndex.derive(rebaseRuns: encoded.bytes[...], bindRuns: [0])
        #expect(index == .absent)
        #expect(try index.pages(path: "straddle").pageSize == 0)
    }

    /// On every fixture app: each indexed page, decoded from its restart point alone, holds
    /// exactly the fixups the whole-stream decode puts on that page, and every fixup is on
    /// an indexed page.
    @Test func everyFixturePageDecodesAloneToItsFixups() throws {
        var pagesChecked = 0
        for app in try FixtureApp.all() where app.launches {
            let closure = try app.closure()
            #expect(closure.consistencyProblems().isEmpty, "\(app)")
            for index in closure.images.indices {
                let image = closure.images[index]
                let all = try closure.fixups(ofImage: index)
                let (pageSize, pages) = try image.fixupPageIndex.pages(path: image.path)
                #expect(pageSize == FixupPageIndex.pageSize, "\(app) \(image.path)")
                var covered = 0
                for page in pages {
                    let alone = try closure.fixups(ofImage: index, page: page)
                    let expected = all.filter { $0.vmOffset / pageSize == page.page }
                    #expect(alone == expected, "\(app) \(image.path) page \(page.page)")
                    covered += alone.count
                    pagesChecked += 1
                }
                #expect(covered == all.count, "\(app) \(image.path)")
            }
        }
        #expect(pagesChecked > 100)
    }

    /// An index that decodes but disagrees with the runs (a page dropped, a restart moved)
    /// is a `verify` problem: that page would never get its fixups in a page-in launch.
    @Test func verifyFindsAnIndexThatDisagreesWithTheRuns() throws {
        let app = try FixtureApp.named("init-order")
        var closure = try app.closure()
        let target = try #require(closure.images.firstIndex { $0.fixupPageIndex.bytes.count > 2 })
        let pages = try closure.images[target].fixupPageIndex.pages(path: "").pages
        closure.images[target].fixupPageIndex = FixupPageIndex(pages: Array(pages.dropLast()))
        let dropped = try ClosureFile.decode(ClosureFile.encode(closure), path: "dropped")
        #expect(dropped.consistencyProblems().contains { $0.contains("fixup page index disagrees with its runs") })

        var moved = pages
        moved[0].rebases.location &+= 8
        moved[0].binds.location &+= 8
        closure.images[target].fixupPageIndex = FixupPageIndex(pages: moved)
        let shifted = try ClosureFile.decode(ClosureFile.encode(closure), path: "moved")
        #expect(shifted.consistencyProblems().contains { $0.contains("fixup page index disagrees with its runs") })
    }
}
