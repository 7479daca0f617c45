import ClosureBuild
import LaunchComparison
import Synchronization
import TestSupport
import Dyld2
import Dyld3
import Foundation
import LaunchClosure
import LoaderCore
import Testing
import ClosureFormat

/// Page-in linking (docs/page-in.md): memory filled page by page on first touch must be
/// exactly what dyld2 writes, whoever touches it first (a second thread, the kernel inside a
/// system call), and a launch must leave nothing behind. Where userfaultfd is unavailable,
/// the same tests assert the eager fallback and its reason instead.
@Suite(.serialized) struct PageInTests {
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
            Self.expectPageInOrFallback(comparison.fixupsMode, comparison.fixupsFallbackReason, "\(app)")
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
            Self.expectPageInOrFallback(comparison.fixupsMode, comparison.fixupsFallbackReason, "gen100")
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
        #expect(plan.indexed[0] == false && plan.deferred[0].allSatisfy { !$0 } && plan.indexed.dropFirst().contains(true))
    }

    /// Every deferred page of a page-in launch: its address and its expected bytes, taken from
    /// an eager launch at the same slide (the oracle), released before the page-in launch.
    static func deferredPages(_ app: FixtureApp, slide: UInt64) throws -> [(image: Int, vmOffset: UInt64, words: [UInt64], writable: Bool)] {
        let closure = try app.closure()
        var report = LaunchReport(mode: "dyld3")
        var clock = PhaseClock()
        let eager = try FastPath.launch(closure, closurePath: "(memory)", request: LaunchOptions(
            roots: [app.executable], arch: app.arch, root: app.root, slide: slide, run: false), report: &report, clock: &clock)
        defer { eager.memory.release() }
        let plan = try PageInFixups.plan(closure, pageSize: LaunchMemory.pageSize)
        var pages: [(image: Int, vmOffset: UInt64, words: [UInt64], writable: Bool)] = []
        for (index, image) in eager.memory.images.enumerated() {
            for (position, segment) in image.plan.segments.enumerated() where plan.deferred[index][position] {
                var offset = segment.vmOffset
                while offset < segment.vmOffset + segment.vmSize {
                    let words = (0..<Int(LaunchMemory.pageSize / 8)).map { UnsafeKernelTouch.load(image.base + offset + UInt64($0) * 8) }
                    pages.append((index, offset, words, !segment.readOnlyAfterFixups))
                    offset += LaunchMemory.pageSize
                }
            }
        }
        return pages
    }

    static func pageInLaunch(_ app: FixtureApp, slide: UInt64?, userModeOnly: Bool = false) throws -> Launch {
        var report = LaunchReport(mode: "dyld3")
        var clock = PhaseClock()
        return try FastPath.launch(try app.closure(), closurePath: "(memory)", request: LaunchOptions(
            roots: [app.executable], arch: app.arch, root: app.root, slide: slide, run: false, fixups: .pageIn,
            userModeOnlyFaults: userModeOnly), report: &report, clock: &clock)
    }

    /// Eight threads touch every deferred page at once, each in its own order, so pages are
    /// faulted from one thread while another's fault on them is being filled: every word
    /// each thread reads is the eager launch's.
    @Test func faultsFromSeveralThreadsAtOnceSeeTheFilledPage() throws {
        let app = try #require(Self.launchable.first { $0.name == "init-upward" && $0.variant == "arm64-chained" })
        let slide = Self.randomSlide()
        let expected = try Self.deferredPages(app, slide: slide)
        #expect(expected.count > 10)
        let launch = try Self.pageInLaunch(app, slide: slide)
        defer { launch.memory.release() }
        Self.expectPageInOrFallback(launch.report.fixupsMode, launch.report.fixupsFallbackReason, "\(app)")
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

    /// A page first touched by the kernel inside read(2): resolved by the handler without
    /// `UFFD_USER_MODE_ONLY` (the read lands, the rest of the page holds its fixups); with
    /// it, the kernel-mode fault is not delivered and read(2) fails with EFAULT.
    @Test(arguments: [false, true])
    func aPageFirstTouchedByTheKernel(userModeOnly: Bool) throws {
        try #require(Self.unavailable == nil, "userfaultfd unavailable: \(Self.unavailable ?? "")")
        let app = try #require(Self.launchable.first { $0.name == "basic" && $0.variant == "x86_64-chained" })
        let slide = Self.randomSlide()
        // A page that stays writable (read(2) into __DATA_CONST fails with EFAULT either way).
        let expected = try #require(try Self.deferredPages(app, slide: slide).first { page in
            page.writable && page.words.dropFirst().contains { $0 != 0 }
        })
        let launch = try Self.pageInLaunch(app, slide: slide, userModeOnly: userModeOnly)
        defer { launch.memory.release() }
        let pager = try #require(launch.memory.pager)
        #expect(pager.resolvesKernelFaults == !userModeOnly)
        let address = launch.memory.images[expected.image].base + expected.vmOffset
        let result = UnsafeKernelTouch.readFromPipe([1, 2, 3, 4, 5, 6, 7, 8], into: address)
        if userModeOnly {
            #expect(result == EFAULT)
            #expect(pager.pagesFilled == 0)
            // A user-mode touch still fills it.
            #expect(UnsafeKernelTouch.load(address + 8) == expected.words[1])
        } else {
            #expect(result == 0)
            #expect(UnsafeKernelTouch.load(address) == 0x0807_0605_0403_0201)
            for word in 1..<expected.words.count { #expect(UnsafeKernelTouch.load(address + UInt64(word) * 8) == expected.words[word]) }
        }
        #expect(pager.failure == nil)
    }

    /// A page the handler cannot fill (its image file shrank after the launch) is reported
    /// and made inaccessible: the thread touching it is not left waiting (here the kernel
    /// touches it, and write(2) fails with EFAULT rather than hanging).
    @Test func aHandlerErrorIsReportedAndNobodyWaits() throws {
        try #require(Self.unavailable == nil, "userfaultfd unavailable: \(Self.unavailable ?? "")")
        let app = try #require(Self.launchable.first { $0.name == "basic" && $0.variant == "x86_64-chained" }).scratchCopy()
        defer { try? FileManager.default.removeItem(at: app.directory) }
        let launch = try Self.pageInLaunch(app, slide: nil)
        defer { launch.memory.release() }
        let plan = try PageInFixups.plan(try app.closure(), pageSize: LaunchMemory.pageSize)
        let image = try #require(plan.deferred.firstIndex { $0.contains(true) })
        let segment = launch.memory.images[image].plan.segments[try #require(plan.deferred[image].firstIndex(of: true))]
        try #require(segment.fileSize > 0)
        #expect(truncate(launch.memory.images[image].plan.path, off_t(segment.fileOffset)) == 0)
        let address = launch.memory.images[image].base + segment.vmOffset
        #expect(UnsafeKernelTouch.writeToPipe(from: address, count: 8) == EFAULT)
        let failure = try #require(launch.memory.pager?.failure)
        guard case let .fileShort(failedImage, vmOffset, got, _) = failure else {
            Issue.record("unexpected failure \(failure)")
            return
        }
        #expect(failedImage == image && vmOffset == segment.vmOffset && got == 0)
    }

    /// Released with every page untouched, and touched after release: nothing is mapped
    /// where the launch was, the handler thread is gone, and a touch is a plain fault on an
    /// unmapped address (EFAULT from the kernel), not a wait.
    @Test func releaseWithUntouchedPagesLeavesNothing() throws {
        let app = try #require(Self.launchable.first { $0.name == "init-order" && $0.variant == "x86_64-chained" })
        let before = try Self.pageInResources()
        let launch = try Self.pageInLaunch(app, slide: nil)
        let region = launch.memory.regionBase..<(launch.memory.regionBase + launch.memory.regionSize)
        let deferredAddress = try #require(launch.memory.images.enumerated().lazy.compactMap { index, image in
            launch.memory.deferred[index].firstIndex(of: true).map { image.base + image.plan.segments[$0].vmOffset }
        }.first)
        if Self.unavailable == nil {
            // At least this launch's handler (another suite's may come and go meanwhile).
            #expect(try Self.pageInResources().handlerThreads >= 1)
            #expect(launch.memory.pager?.pagesFilled == 0)
        }
        launch.memory.release()
        #expect(try !ProcessMaps.anyMapping(in: region))
        let after = try Self.settledResources(notAbove: before)
        #expect(after.handlerThreads <= before.handlerThreads && after.userfaultfds <= before.userfaultfds, "before \(before), after \(after)")
        #expect(UnsafeKernelTouch.writeToPipe(from: deferredAddress, count: 8) == EFAULT)
    }

    /// 1,000 page-in launches, each touching one deferred page, then released: no handler
    /// thread, userfaultfd or image descriptor, and no mapping of the app, is left behind.
    /// (Other suites make page-in launches in this process at the same time: handler
    /// threads and userfaultfds, counted process-wide, must come back to no more than
    /// before, so a leak per launch shows as hundreds; the app's descriptors and mappings,
    /// under its own scratch copy, must be none.)
    @Test func aThousandLaunchesLeaveNothingBehind() throws {
        let app = try #require(Self.launchable.first { $0.name == "basic" && $0.variant == "x86_64-chained" }).scratchCopy()
        defer { try? FileManager.default.removeItem(at: app.directory) }
        let closure = try app.closure()
        let before = try Self.pageInResources(scratch: app.directory.path)
        let totals = try Self.processTotals()
        var filled = 0
        for _ in 0..<1000 {
            var report = LaunchReport(mode: "dyld3")
            var clock = PhaseClock()
            let launch = try FastPath.launch(closure, closurePath: "(memory)", request: LaunchOptions(
                roots: [app.executable], arch: app.arch, root: app.root, run: false, fixups: .pageIn), report: &report, clock: &clock)
            for (index, image) in launch.memory.images.enumerated() {
                if let position = launch.memory.deferred[index].firstIndex(of: true) {
                    _ = UnsafeKernelTouch.load(image.base + image.plan.segments[position].vmOffset)
                    break
                }
            }
            filled += launch.memory.pager?.pagesFilled ?? 0
            launch.memory.release()
        }
        let after = try Self.settledResources(notAbove: before, scratch: app.directory.path)
        let totalsAfter = try Self.processTotals()
        #expect(after.handlerThreads <= before.handlerThreads && after.userfaultfds <= before.userfaultfds,
                "before \(before), after \(after); process totals before \(totals), after \(totalsAfter)")
        #expect(after.scratchDescriptors == 0 && after.scratchMappings == 0, "\(after)")
        if Self.unavailable == nil { #expect(filled == 1000) }
    }

    /// ``pageInResources(scratch:)`` once no more handler threads and userfaultfds are
    /// held than in `before`, or after 3 s: another suite's page-in launch running at the
    /// moment it is sampled ends in milliseconds, a leak stays.
    static func settledResources(notAbove before: Resources, scratch: String? = nil) throws -> Resources {
        var resources = try pageInResources(scratch: scratch)
        for _ in 0..<150 where resources.handlerThreads > before.handlerThreads || resources.userfaultfds > before.userfaultfds {
            Thread.sleep(forTimeInterval: 0.02)
            resources = try pageInResources(scratch: scratch)
        }
        return resources
    }

    /// What page-in launches hold: handler threads (by name), userfaultfd descriptors,
    /// descriptors and mappings of files under `scratch`.
    struct Resources: Equatable {
        var handlerThreads = 0, userfaultfds = 0, scratchDescriptors = 0, scratchMappings = 0
    }

    static func pageInResources(scratch: String? = nil) throws -> Resources {
        var resources = Resources()
        let manager = FileManager.default
        for task in try manager.contentsOfDirectory(atPath: "/proc/self/task") {
            let comm = (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)) ?? ""
            if comm.trimmingCharacters(in: .whitespacesAndNewlines) == FixupPager.threadName { resources.handlerThreads += 1 }
        }
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
