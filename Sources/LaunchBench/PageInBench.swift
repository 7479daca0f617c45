import Dyld3
import Foundation
import LoaderCore
import MachOReader
import ClosureFormat
import LaunchMemory

/// Page-in linking measured beside eager dyld3 (`dyld3 bench --fixups page-in`, docs/page-in.md).
package struct PageInResult: Codable, Sendable {
    /// Why the launches were eager although page-in was asked for (userfaultfd unavailable).
    package var fallbackReason: String?
    /// Pages indexed in the closure (pages that receive fixups), and pages registered with
    /// the handler (every page of the segments that receive fixups).
    package var fixupPages: Int, registeredPages: Int
    /// Launch to the point where `main` would run: page-in, and eager dyld3 in the same rounds.
    package var launch: Distribution, eagerLaunch: Distribution
    /// After the page-in launch: time to touch 10%, 50% and 100% of the fixup pages (one
    /// word each, pages in a fixed shuffled order), each from the launch's end.
    package var touch: [String: Distribution]
    /// Private pages in the launch's region (``ProcessMemory/privatePages(_:)``): "eager"
    /// after an eager launch, "launch" after a page-in launch, then after touching each share ("10", "50", "100").
    package var privatePages: [String: Int]
    /// The pager's own count of pages filled in that round ("launch", "10", "50", "100").
    package var pagesFilled: [String: Int]
    /// The faults that filled them, counted by the pager in the same round (cumulative).
    package var faults: [String: Int]
    /// The pages one fault filled at most (``LaunchOptions/faultAround``).
    package var faultAround: Int

    enum CodingKeys: String, CodingKey {
        case fallbackReason, fixupPages, registeredPages, launch = "launchNs", eagerLaunch = "eagerLaunchNs", touch = "touchNs"
        case privatePages, pagesFilled, faults, faultAround
    }

    /// The median time of touching 100% of the fixup pages, per fault and per page filled by the touch.
    package var costPerFault: (fault: Double, page: Double)? {
        guard let touch = self.touch["100"]?.median, let faults = faults["100"], let pages = pagesFilled["100"] else { return nil }
        let touchFaults = faults - (self.faults["launch"] ?? 0), touchPages = pages - (pagesFilled["launch"] ?? 0)
        guard touchFaults > 0, touchPages > 0 else { return nil }
        return (Double(touch) / Double(touchFaults), Double(touch) / Double(touchPages))
    }

    package static let touchLevels = [10, 50, 100]
}

enum PageInBench {
    /// `runs` rounds (after one discarded) of an eager and a page-in launch of `closure`
    /// with the touches, then one untimed round reading private pages after each step.
    static func measure(_ closure: LaunchClosure, closurePath: String, options: LaunchOptions, runs: Int) throws -> PageInResult {
        let pageIn = changed(options) { $0.fixups = .pageIn }
        let plan = try PageInFixups.plan(closure, pageSize: LaunchMemory.pageSize)
        // Every indexed page as (image, offset), in a fixed pseudo-random order.
        var pages = plan.pages.enumerated().flatMap { index, list in list.map { (image: index, offset: $0.page * LaunchMemory.pageSize) } }
        var generator = SplitMix64(seed: 1)
        pages.shuffle(using: &generator)
        let counts = PageInResult.touchLevels.map { (pages.count * $0 + 99) / 100 }

        func launch(_ request: LaunchOptions) throws -> Launch { try Self.launch(closure, closurePath: closurePath, request: request) }
        func touch(_ memory: LaunchMemory, _ range: Range<Int>) -> UInt64 {
            var sum: UInt64 = 0
            for page in pages[range] { sum &+= UnsafePageTouch.touch(memory.images[page.image].base + page.offset) }
            return sum
        }
        var eagerTimes: [Int64] = [], launchTimes: [Int64] = [], touchTimes: [[Int64]] = counts.map { _ in [] }
        var fallback: String?, registered = 0
        let clock = ContinuousClock()
        for round in 0...runs {
            let eager = try launch(options)
            eager.memory.release()
            let paged = try launch(pageIn)
            fallback = paged.report.pageInFallback.map(String.init(describing:))
            registered = Int((paged.memory.pager?.registeredBytes ?? 0) / LaunchMemory.pageSize)
            var touched = 0, sink: UInt64 = 0
            let start = clock.now
            var levels: [Int64] = []
            for count in counts {
                sink &+= touch(paged.memory, touched..<count)
                touched = count
                levels.append((clock.now - start).nanoseconds)
            }
            paged.memory.release()
            keep(sink)
            guard round > 0 else { continue }
            eagerTimes.append(eager.report.timings[.total] ?? 0)
            launchTimes.append(paged.report.timings[.total] ?? 0)
            for (level, time) in levels.enumerated() { touchTimes[level].append(time) }
        }
        let eager = try launch(options)
        var privatePages = ["eager": ProcessMemory.privatePages(eager.memory)], filled: [String: Int] = [:], faults: [String: Int] = [:]
        eager.memory.release()
        let paged = try launch(pageIn)
        var touched = 0
        for (level, count) in [("launch", 0)] + zip(PageInResult.touchLevels.map { "\($0)" }, counts) {
            keep(touch(paged.memory, touched..<count))
            touched = count
            privatePages[level] = ProcessMemory.privatePages(paged.memory)
            (filled[level], faults[level]) = (paged.memory.pager?.pagesFilled ?? 0, paged.memory.pager?.faults ?? 0)
        }
        paged.memory.release()
        return PageInResult(
            fallbackReason: fallback, fixupPages: pages.count, registeredPages: registered,
            launch: Distribution(launchTimes), eagerLaunch: Distribution(eagerTimes),
            touch: Dictionary(uniqueKeysWithValues: zip(PageInResult.touchLevels.map { "\($0)" }, touchTimes.map(Distribution.init))),
            privatePages: privatePages, pagesFilled: filled, faults: faults, faultAround: options.faultAround)
    }

    /// Keeps the loaded words alive, so the optimizer cannot drop a touch whose result is
    /// otherwise unused (it did, in the untimed round: release builds read 0 private pages).
    @_optimize(none) @inline(never)
    static func keep(_ sum: UInt64) {}

    /// One dyld3 launch as `request` asks (eager or page-in), as `dyld3 launch` makes it: from
    /// the closure file at `closurePath` (read and checked each time), else from `closure` in memory.
    static func launch(_ closure: LaunchClosure, closurePath: String = "(built in memory)", request: LaunchOptions) throws -> Launch {
        if FileManager.default.fileExists(atPath: closurePath) { return try FastPath.launch(closurePath: closurePath, request: request) }
        return try FastPath.launch(closure, closurePath: closurePath, request: request)
    }
}
