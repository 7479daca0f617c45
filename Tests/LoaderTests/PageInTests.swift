import ClosureBuild
import LaunchComparison
import Synchronization
import TestSupport
import Dyld2
import Dyld3
import Foundation
import ClosureCache
import LoaderCore
import LaunchPlan
import Testing
import ClosureFormat
import Pager
import LaunchMemory

/// Page-in linking (docs/page-in.md): memory filled page by page on first touch must be
/// exactly what dyld2 writes, whoever touches it first (a second thread, the kernel inside a
/// system call), and a launch must leave nothing behind. Where userfaultfd is unavailable,
/// the same tests assert the eager fallback and its reason instead.
@Suite(.serialized, .bounded) struct PageInTests {
    static let launchable = SlowPathTests.apps.filter(\.launches)

    /// nil when this machine gives userfaultfd; else why not (the fallback is then asserted).
    static let unavailable: String? = {
        switch FixupPager.open() {
        case let .success(pager):
            pager.close()
            return nil
        case let .failure(reason): return "\(reason)"
        }
    }()

    /// A random page-aligned slide in the middle of the address space.
    static func randomSlide() -> UInt64 { UInt64.random(in: 0x100_0000...0x2ff_0000) << 16 }

    /// The launch reports page-in, or (only where userfaultfd is unavailable) eager and why.
    static func expectPageInOrFallback(_ mode: FixupsMode, _ reason: String?, _ context: String) {
        if let unavailable {
            #expect(mode == .eager && reason?.contains("userfaultfd is not available") == true, "\(context): \(unavailable)")
        } else {
            #expect(mode == .pageIn && reason == nil, "\(context): \(reason ?? "")")
        }
    }

    @Test(arguments: launchable)
    func compareAtRandomSlidesFindsNoDifference(_ app: FixtureApp) throws {
        let closure = try app.closure()
        for _ in 0..<3 {
            let options = LaunchOptions(roots: [app.executable], arch: app.arch, root: app.root, slide: Self.randomSlide(), fixups: .pageIn)
            let comparison = try LaunchComparison.run(options: options, closure: closure, closurePath: "(built in memory)")
            #expect(comparison.differences.isEmpty, "\(app) slide 0x\(String(comparison.slide, radix: 16)): \(comparison.differences)")
            Self.expectPageInOrFallback(comparison.fixupsMode, comparison.pageInFallback?.description, "\(app)")
            if Self.unavailable == nil {
                #expect(comparison.pagesRegistered > 0 && comparison.pagesFilled == comparison.pagesRegistered, "\(app)")
            }
            if app.arch == CodeRunner.hostArchitecture, case let .result(expected, _) = app.expectation {
                #expect(comparison.dyld3Result == expected, "\(app)")
            }
        }
    }

    /// The generated 100-framework app (`make test` builds it), at two random slides.
    @Test func generatedAppComparesIdentical() throws {
        let base = Paths.repoRoot.appendingPathComponent("build/demo-gen100").path
        let executable = base + "/gen100.app/gen100"
        try #require(FileManager.default.fileExists(atPath: executable), "run tools/gen-app --preset 100 --seed 1 --out build/demo-gen100")
        let closure = try ClosureBuilder.build(roots: [executable], arch: "x86_64", root: base + "/root")
        for _ in 0..<2 {
            let options = LaunchOptions(roots: [executable], arch: "x86_64", root: base + "/root", slide: Self.randomSlide(), fixups: .pageIn)
            let comparison = try LaunchComparison.run(options: options, closure: closure, closurePath: "(built in memory)")
            #expect(comparison.differences.isEmpty, "\(comparison.differences.prefix(5))")
            #expect(comparison.images > 100)
            Self.expectPageInOrFallback(comparison.fixupsMode, comparison.pageInFallback?.description, "gen100")
        }
    }

    /// An image without a page index (as for a fixup straddling two pages) is linked
    /// eagerly inside a page-in launch; the memory is still dyld2's.
    @Test func anImageWithoutAnIndexIsLinkedEagerly() throws {
        let app = try #require(Self.launchable.first { $0.name == "init-order" && $0.variant == "x86_64-opcodes" })
        var closure = try app.closure()
        closure.images[0].fixupPageIndex = .absent
        let options = LaunchOptions(roots: [app.executable], arch: app.arch, root: app.root, slide: Self.randomSlide(), fixups: .pageIn)
        let comparison = try LaunchComparison.run(options: options, closure: closure, closurePath: "(built in memory)")
        #expect(comparison.differences.isEmpty, "\(comparison.differences)")
        let plan = try PageInFixups.plan(closure, pageSize: LaunchMemory.pageSize)
        #expect(plan.indexed[0] == false && plan.ranges[0].allSatisfy(\.isEmpty) && plan.indexed.dropFirst().contains(true))
    }

    /// Every page a page-in launch registers (the pages that receive fixups): its address
    /// and its expected bytes, taken from an eager launch at the same slide (the oracle),
    /// released before the page-in launch.
    static func deferredPages(_ app: FixtureApp, slide: UInt64) throws -> [(image: Int, vmOffset: UInt64, words: [UInt64], writable: Bool)] {
        let closure = try app.closure()
        let eager = try FastPath.launch(closure, closurePath: "(memory)", request: LaunchOptions(
            roots: [app.executable], arch: app.arch, root: app.root, slide: slide, run: false))
        defer { eager.memory.release() }
        let plan = try PageInFixups.plan(closure, pageSize: LaunchMemory.pageSize)
        var pages: [(image: Int, vmOffset: UInt64, words: [UInt64], writable: Bool)] = []
        for (index, image) in eager.memory.images.enumerated() {
            for (position, segment) in image.plan.segments.enumerated() {
                for range in plan.ranges[index][position] {
                    for offset in stride(from: range.lowerBound, to: range.upperBound, by: Int(LaunchMemory.pageSize)) {
                        let words = (0..<Int(LaunchMemory.pageSize / 8)).map { UnsafeKernelTouch.load(image.base + offset + UInt64($0) * 8) }
                        pages.append((index, offset, words, !segment.readOnlyAfterFixups))
                    }
                }
            }
        }
        return pages
    }

    /// Runs `body` on a scratch copy of the basic chained fixture launched with page-in, and
    /// the first page range it registered (``firstPagedRange(_:)``); then releases the launch
    /// and removes the copy. Needs userfaultfd.
    static func withPagedBasicCopy(
        _ body: (FixtureApp, Launch, _ image: Int, SegmentPlan, Range<UInt64>) throws -> Void
    ) throws {
        try #require(unavailable == nil, "userfaultfd unavailable: \(unavailable ?? "")")
        let app = try #require(launchable.first { $0.name == "basic" && $0.variant == "x86_64-chained" }).scratchCopy()
        defer { try? FileManager.default.removeItem(at: app.directory) }
        let launch = try pageInLaunch(app, slide: nil)
        defer { launch.memory.release() }
        let (image, segment, range) = try #require(firstPagedRange(launch.memory))
        try body(app, launch, image, segment, range)
    }

    static func pageInLaunch(_ app: FixtureApp, slide: UInt64?) throws -> Launch {
        return try FastPath.launch(try app.closure(), closurePath: "(memory)", request: LaunchOptions(
            roots: [app.executable], arch: app.arch, root: app.root, slide: slide, run: false, fixups: .pageIn))
    }

    /// The address of the first page a page-in launch registered.
    static func firstPagedAddress(_ memory: LaunchMemory) -> UInt64? {
        firstPagedRange(memory).map { memory.images[$0.image].base + $0.range.lowerBound }
    }

    /// The first page range a page-in launch registered: its image, segment and offsets
    /// from the image's base.
    static func firstPagedRange(_ memory: LaunchMemory) -> (image: Int, segment: SegmentPlan, range: Range<UInt64>)? {
        for (index, image) in memory.images.enumerated() {
            for (position, ranges) in memory.pagedRanges[index].enumerated() {
                if let first = ranges.first { return (index, image.plan.segments[position], first) }
            }
        }
        return nil
    }

    /// Eight threads touch every deferred page at once, each in its own order, so pages are
    /// faulted from one thread while another's fault on them is being filled: every word
    /// each thread reads is the eager launch's.
    @Test func faultsFromSeveralThreadsAtOnceSeeTheFilledPage() throws {
        let app = try #require(Self.launchable.first { $0.name == "init-upward" && $0.variant == "arm64-chained" })
        let slide = Self.randomSlide()
        let expected = try Self.deferredPages(app, slide: slide)
        #expect(expected.count >= 8)
        let launch = try Self.pageInLaunch(app, slide: slide)
        defer { launch.memory.release() }
        Self.expectPageInOrFallback(launch.report.fixupsMode, launch.report.pageInFallback?.description, "\(app)")
        let bases = launch.memory.images.map(\.base)
        let mismatches = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            var wrong = 0
            for step in 0..<expected.count {
                let page = expected[(step * (thread + 1) + thread * 7) % expected.count]
                for (word, value) in page.words.enumerated() where UnsafeKernelTouch.load(bases[page.image] + page.vmOffset + UInt64(word) * 8) != value {
                    wrong += 1
                }
            }
            mismatches.withLock { $0 += wrong }
        }
        #expect(mismatches.withLock { $0 } == 0)
        #expect(launch.memory.pager?.failure == nil)
        if Self.unavailable == nil { #expect(launch.memory.pager?.pagesFilled == expected.count) }
    }

    /// A page first touched by the kernel inside read(2): the fault is not delivered to user
    /// space (UFFD_FEATURE_SIGBUS, UFFD_USER_MODE_ONLY), read(2) fails with EFAULT at once,
    /// nothing waits and the page stays untouched; a user-mode touch then fills it.
    @Test func aPageFirstTouchedByTheKernel() throws {
        try #require(Self.unavailable == nil, "userfaultfd unavailable: \(Self.unavailable ?? "")")
        let app = try #require(Self.launchable.first { $0.name == "basic" && $0.variant == "x86_64-chained" })
        let slide = Self.randomSlide()
        let expected = try #require(try Self.deferredPages(app, slide: slide).first { page in
            page.writable && page.words.dropFirst().contains { $0 != 0 }
        })
        let launch = try Self.pageInLaunch(app, slide: slide)
        defer { launch.memory.release() }
        let pager = try #require(launch.memory.pager)
        let address = launch.memory.images[expected.image].base + expected.vmOffset
        #expect(UnsafeKernelTouch.readFromPipe([1, 2, 3, 4, 5, 6, 7, 8], into: address) == EFAULT)
        #expect(pager.pagesFilled == 0)
        for word in 0..<expected.words.count { #expect(UnsafeKernelTouch.load(address + UInt64(word) * 8) == expected.words[word]) }
        #expect(pager.pagesFilled >= 1 && pager.faults == 1)
        #expect(pager.failure == nil)
    }

    /// A page that cannot be filled (its image file shrank after the launch): a system call
    /// touching it fails with EFAULT at once, and the fill path reports the page, the image
    /// and why, without installing anything (a user-mode touch would end the process by
    /// SIGBUS: `aTouchOfAPageThatCannotBeFilledEndsTheProcessBySIGBUS`).
    @Test func aPageThatCannotBeFilledIsReportedAndNobodyWaits() throws {
        try Self.withPagedBasicCopy { app, launch, image, segment, range in
            try #require(segment.fileSize > range.lowerBound - segment.vmOffset)
            #expect(truncate(launch.memory.images[image].plan.path, off_t(segment.fileOffset)) == 0)
            let address = launch.memory.images[image].base + range.lowerBound
            #expect(UnsafeKernelTouch.writeToPipe(from: address, count: 8) == EFAULT)
            let pager = try #require(launch.memory.pager)
            #expect(pager.fill(address) == false)
            let failure = try #require(pager.failure)
            guard case let .fileShort(failedImage, vmOffset, got, _) = failure else {
                Issue.record("unexpected failure \(failure)")
                return
            }
            #expect(failedImage == image && vmOffset == range.lowerBound && got == 0)
            #expect(pager.pagesFilled == 0)
            #expect(UnsafeKernelTouch.writeToPipe(from: address, count: 8) == EFAULT)
        }
    }

    /// A user-mode touch of a page that cannot be filled (its image file shrank after the
    /// launch) ends the process by SIGBUS, as a touch of a mapped file's missing page does,
    /// after one line naming the image and the page. In a child process, which an alarm ends
    /// (by SIGALRM, failing the test) if it hangs.
    @Test func aTouchOfAPageThatCannotBeFilledEndsTheProcessBySIGBUS() async throws {
        try #require(Self.unavailable == nil, "userfaultfd unavailable: \(Self.unavailable ?? "")")
        let result = await #expect(processExitsWith: .signal(SIGBUS), observing: [\.standardErrorContent]) {
            alarm(30)
            guard let app = PageInTests.launchable.first(where: { $0.name == "basic" && $0.variant == "x86_64-chained" }),
                  let copy = try? app.scratchCopy(), let launch = try? PageInTests.pageInLaunch(copy, slide: nil),
                  let (image, segment, range) = PageInTests.firstPagedRange(launch.memory) else { exit(3) }
            guard truncate(launch.memory.images[image].plan.path, off_t(segment.fileOffset)) == 0 else { exit(4) }
            _ = UnsafeKernelTouch.load(launch.memory.images[image].base + range.lowerBound)
            exit(5)
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("dyld3: page-in: ") && message.contains("/Frameworks/Util.framework/Util: cannot fill page +0x")
                    || message.contains("/basic: cannot fill page +0x"), "\(message.prefix(800))")
        #expect(message.contains("its image file is shorter than when the launch began"), "\(message.prefix(800))")
    }

    /// A signed image's page changed on disk after the launch identified it (same size,
    /// same inode): the fault path hashes the page's file bytes before any fixup and finds
    /// they do not match its code slot, so the page is never installed; the failure names the
    /// page and the slot (as `codesign verify` reports it), and a system call touching the
    /// page gets EFAULT, never the changed bytes.
    @Test func aPageChangedOnDiskAfterLaunchFailsItsSignatureCheck() throws {
        try Self.withPagedBasicCopy { app, launch, image, segment, range in
            let mapped = launch.memory.images[image]
            let fileOffset = segment.fileOffset + (range.lowerBound - segment.vmOffset)
            // The oracle: the image's own signature (ld64.lld's), checked whole, now fails too.
            let path = mapped.plan.path
            let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
            try handle.seek(toOffset: fileOffset + 100)
            let byte = try #require(try handle.read(upToCount: 1)?.first)
            try handle.seek(toOffset: fileOffset + 100)
            try handle.write(contentsOf: [byte ^ 0x01])
            try handle.close()
            let after = try ImageFile.load(path: path, arch: app.arch)
            #expect(throws: LoadError.self) { try CodeSigning.verify(after.image, path: path) }

            let pager = try #require(launch.memory.pager)
            let address = mapped.base + range.lowerBound
            #expect(UnsafeKernelTouch.writeToPipe(from: address, count: 8) == EFAULT)
            #expect(pager.fill(address) == false)
            let failure = try #require(pager.failure)
            guard case let .signature(failedImage, vmOffset, slot) = failure else {
                Issue.record("unexpected failure \(failure)")
                return
            }
            #expect(failedImage == image && vmOffset == range.lowerBound && slot == Int(fileOffset / 4096))
            #expect(pager.pagesFilled == 0)
            #expect(UnsafeKernelTouch.writeToPipe(from: address, count: 8) == EFAULT)
        }
    }

    /// Released with every page untouched, and touched after release: nothing is mapped
    /// where the launch was, its userfaultfd is closed, and a touch is a plain fault on an
    /// unmapped address (EFAULT from the kernel), not a wait.
    @Test func releaseWithUntouchedPagesLeavesNothing() throws {
        let app = try #require(Self.launchable.first { $0.name == "init-order" && $0.variant == "x86_64-chained" })
        let before = try Self.pageInResources()
        let launch = try Self.pageInLaunch(app, slide: nil)
        let region = launch.memory.regionBase..<(launch.memory.regionBase + launch.memory.regionSize)
        let deferredAddress = try #require(Self.firstPagedAddress(launch.memory))
        if Self.unavailable == nil {
            // At least this launch's userfaultfd (another suite's may come and go meanwhile).
            #expect(try Self.pageInResources().userfaultfds >= 1)
            #expect(launch.memory.pager?.pagesFilled == 0)
        }
        launch.memory.release()
        #expect(try !ProcessMaps.anyMapping(in: region))
        let after = try Self.settledResources(notAbove: before)
        #expect(after.userfaultfds <= before.userfaultfds, "before \(before), after \(after)")
        #expect(UnsafeKernelTouch.writeToPipe(from: deferredAddress, count: 8) == EFAULT)
    }

    /// 1,000 page-in launches, each touching one registered page, then released: no
    /// userfaultfd or image descriptor, and no mapping of the app, is left behind (page-in
    /// starts no thread). (Other suites make page-in launches in this process at the same
    /// time: userfaultfds, counted process-wide, must come back to no more than before, so a
    /// leak per launch shows as hundreds; the app's descriptors and mappings, under its own
    /// scratch copy, must be none.)
    @Test func aThousandLaunchesLeaveNothingBehind() throws {
        let app = try #require(Self.launchable.first { $0.name == "basic" && $0.variant == "x86_64-chained" }).scratchCopy()
        defer { try? FileManager.default.removeItem(at: app.directory) }
        let closure = try app.closure()
        let before = try Self.pageInResources(scratch: app.directory.path)
        let totals = try Self.processTotals()
        var faults = 0
        for _ in 0..<1000 {
            let launch = try FastPath.launch(closure, closurePath: "(memory)", request: LaunchOptions(
                roots: [app.executable], arch: app.arch, root: app.root, run: false, fixups: .pageIn))
            if let address = Self.firstPagedAddress(launch.memory) { _ = UnsafeKernelTouch.load(address) }
            faults += launch.memory.pager?.faults ?? 0
            launch.memory.release()
        }
        let after = try Self.settledResources(notAbove: before, scratch: app.directory.path)
        let totalsAfter = try Self.processTotals()
        #expect(after.userfaultfds <= before.userfaultfds,
                "before \(before), after \(after); process totals before \(totals), after \(totalsAfter)")
        #expect(after.scratchDescriptors == 0 && after.scratchMappings == 0, "\(after)")
        if Self.unavailable == nil { #expect(faults == 1000) }
    }

    /// ``pageInResources(scratch:)`` once no more userfaultfds are held than in `before`,
    /// or after 3 s: another suite's launch running at the moment it is sampled
    /// ends in milliseconds, a leak stays.
    static func settledResources(notAbove before: Resources, scratch: String? = nil) throws -> Resources {
        var resources = try pageInResources(scratch: scratch)
        for _ in 0..<150 where resources.userfaultfds > before.userfaultfds {
            Thread.sleep(forTimeInterval: 0.02)
            resources = try pageInResources(scratch: scratch)
        }
        return resources
    }

    /// What page-in launches could hold: userfaultfd descriptors, descriptors and mappings
    /// of files under `scratch`.
    struct Resources: Equatable {
        var userfaultfds = 0, scratchDescriptors = 0, scratchMappings = 0
    }

    static func pageInResources(scratch: String? = nil) throws -> Resources {
        var resources = Resources()
        let manager = FileManager.default
        for fd in try manager.contentsOfDirectory(atPath: "/proc/self/fd") {
            guard let target = try? manager.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)") else { continue }
            if target == "anon_inode:[userfaultfd]" { resources.userfaultfds += 1 }
            if let scratch, target.hasPrefix(scratch) { resources.scratchDescriptors += 1 }
        }
        if let scratch {
            let maps = String(decoding: try FileHandle(forReadingAtPath: "/proc/self/maps")?.readToEnd() ?? Data(), as: UTF8.self)
            resources.scratchMappings = maps.split(separator: "\n").count { $0.contains(scratch) }
        }
        return resources
    }

    /// /proc/self/maps lines, /proc/self/task and /proc/self/fd entries.
    static func processTotals() throws -> (maps: Int, tasks: Int, fds: Int) {
        let maps = String(decoding: try FileHandle(forReadingAtPath: "/proc/self/maps")?.readToEnd() ?? Data(), as: UTF8.self)
        return (maps.split(separator: "\n").count, try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count,
                try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count)
    }
}
