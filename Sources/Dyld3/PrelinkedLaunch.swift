import LaunchClosure
import LoaderCore
import ClosureFormat
import LaunchPlan

/// The launch of a prelinked set (docs/prelinked.md): the set file opened and checked like
/// a closure (ownership, checksum, binding to the request; with `--trust`, its signature and
/// its data's signed SHA-256), every source image checked by
/// the status of its path (no open, no mapping), one range reserved and the set's data
/// mapped over it in one `mmap`, the slide stored into every word that holds an address in
/// the range, protections set, then the thread-local step, the `+load` calls, the
/// initializers and `main`, as the fast path runs them.
///
/// Every refusal before `main` is a `ClosureError` naming the set file, thrown after
/// everything mapped was released, so `auto` can fall back to the per-image closure.
public enum PrelinkedLaunch {
    /// The report's mode for a launch from a prelinked set.
    public static let mode = "prelinked"

    /// Launches `request` from the set at `setPath`.
    public static func launch(setPath: String, request: LaunchOptions, checks: FastPath.Checks = FastPath.Checks()) throws -> Launch {
        var report = LaunchReport(mode: mode)
        var clock = PhaseClock()
        guard !request.verifyPages else {
            throw ClosureError.incompatible(path: setPath, what: "--verify-pages checks the images' own pages, which a prelinked set does not map")
        }
        let opened = try PrelinkedSetFile.open(setPath, trusting: checks.trustKey)
        let set = opened.set, closure = set.closure
        try FastPath.checkBinding(closure.binding, request: request, closurePath: setPath)
        // Trusting a key, the data is what was signed: its SHA-256, at every launch.
        if checks.alwaysHashContent || checks.trustKey != nil { try opened.checkData() }
        report.timings[.closure] = clock.lap()
        var hashed = 0
        try set.checkSources(setPath: setPath, builtAt: opened.builtAt, alwaysHash: checks.alwaysHashContent, hashedImages: &hashed)
        report.imagesHashed = hashed
        report.images = closure.images.map(\.path)
        if request.signingPolicy != .default {
            try request.signingPolicy.check(closure.images.map { ($0.path, $0.identity.signature) })
        }
        let (memory, pagedIn) = try map(opened, request: request, report: &report)
        report.slide = memory.images[0].slide
        report.timings[.mapping] = clock.lap()
        if !pagedIn {
            do throws(ClosureError) {
                try slide(set, memory: memory, setPath: setPath)
            } catch {
                memory.release()
                throw error
            }
            report.timings[.rebase] = clock.lap()
        }
        report.rebases = set.slideCount
        do throws(LoadError) {
            if !closure.threadLocals.setups.isEmpty || closure.threadLocals.hostServices != nil {
                try ThreadLocals.apply(closure.threadLocals.setups, hostServices: closure.threadLocals.hostServices, memory: memory)
            }
            // `dlopen` from the launch's code: the set's closure's dlopen closures, as a per-image launch.
            memory.attach(ClosureDynamicLoader(launch: closure, closurePath: setPath, request: request, memory: memory),
                          table: closure.threadLocals.hostServices.map { memory.images[$0.image].base &+ $0.vmOffset })
            // A page-in launch leaves its pages untouched: a digest would fault every one in.
            let digest = pagedIn ? .none : LaunchDigest(request)
            if digest == .beforeCode { report.digest = try clock.excluding { () throws(LoadError) in digestOf(memory, set) } }
            try memory.applyPrelinkedProtections()
            try LaunchSequence.runInitializersThenMain(
                order: closure.initializerOrder, initializers: closure.images.map(\.initializers), mainImage: closure.rootCount - 1,
                entryOffset: closure.entryOffset, paths: report.images, arch: closure.arch, run: request.run, memory: memory,
                objcLoads: closure.objc.loads, report: &report, clock: &clock)
            report.timings[.total] = clock.total()
            if closure.objc.bindRuns.isEmpty {
                report.objcSkippedReason = "the set's closure records no Objective-C step"
            }
            if digest == .afterLaunch { report.digest = digestOf(memory, set) }
        } catch {
            memory.release()
            throw error
        }
        return Launch(memory: memory, report: report, fixups: nil)
    }

    /// Maps the set: eagerly, or for `--fixups page-in` with the pages that receive slide
    /// stores reserved, registered with a userfaultfd and made live (every run and page
    /// checked first). Where userfaultfd is unavailable, or registering fails, the memory is
    /// mapped again for an eager launch, the reason kept in the report. Whether the pages
    /// are paged in.
    static func map(_ opened: PrelinkedSetFile.Opened, request: LaunchOptions, report: inout LaunchReport) throws -> (LaunchMemory, Bool) {
        let set = opened.set, setPath = opened.path
        let plans = set.closure.images.map(\.plan)
        func mapEagerly() throws -> LaunchMemory {
            do throws(LoadError) {
                return try LaunchMemory.mapPrelinked(plans: plans, offsets: set.imageOffsets, rangeSize: set.rangeSize,
                                                     fd: opened.fd, dataOffset: opened.header.dataOffset, firstSlide: request.slide)
            } catch {
                guard case let .mapping(image, reason) = error else { throw error }
                throw ClosureError.mapping(path: setPath, image: image, what: reason)
            }
        }
        guard request.fixups == .pageIn else { return (try mapEagerly(), false) }
        try set.checkSlideRuns(path: setPath)
        let index = try set.slidePageIndex.pages(path: setPath)
        let pageSize = LaunchMemory.pageSize
        let reason: String
        if index.pageSize != pageSize {
            reason = "the set's slide runs are not indexed by \(pageSize)-byte pages"
        } else {
            switch (FixupPager.open(), ImageDescriptor.open(setPath)) {
            case let (.failure(failure), _):
                reason = "userfaultfd is not available: \(failure)"
            case let (.success(pager), .failure(failure)):
                pager.close()
                reason = "the set cannot be opened for page-in: \(failure)"
            case let (.success(pager), .success(descriptor)):
                guard descriptor.status.inode == opened.status.inode, descriptor.status.size == opened.status.size else {
                    pager.close()
                    throw ClosureError.stale(path: setPath, image: setPath, what: "was replaced while it was being opened")
                }
                // Consecutive pages of one segment are one range (each segment has its
                // protection). Pages and segments both ascend: one pass over each.
                let segments = set.rangePlan.segments.sorted { $0.vmOffset < $1.vmOffset }
                var ranges: [(range: Range<UInt64>, segment: SegmentPlan)] = [], position = 0
                for page in index.pages {
                    let start = page.page * pageSize
                    while position < segments.count, segments[position].vmOffset + segments[position].vmSize <= start { position += 1 }
                    guard position < segments.count else { break }
                    if let last = ranges.last, last.range.upperBound == start, last.segment.vmOffset == segments[position].vmOffset {
                        ranges[ranges.count - 1].range = last.range.lowerBound..<(start + pageSize)
                    } else {
                        ranges.append((start..<(start + pageSize), segments[position]))
                    }
                }
                var mapped: LaunchMemory?
                do {
                    let memory = try LaunchMemory.mapPrelinked(plans: plans, offsets: set.imageOffsets, rangeSize: set.rangeSize, fd: opened.fd,
                                                               dataOffset: opened.header.dataOffset, firstSlide: request.slide,
                                                               pageIn: (pager, ranges, setPath, descriptor))
                    mapped = memory
                    try pager.start(source: PageInFixups(slideRuns: set.slideRuns, pages: index.pages, vmSize: set.rangeSize, path: setPath,
                                                         pageSize: pageSize),
                                    faultAround: request.faultAround)
                    report.fixupsMode = .pageIn
                    report.fixupPages = index.pages.count
                    report.registeredBytes = pager.registeredBytes
                    return (memory, true)
                } catch {
                    if let mapped { mapped.release() } else { pager.close() }
                    reason = "page-in setup failed: \(error)"
                }
            }
        }
        report.fixupsFallbackReason = reason
        return (try mapEagerly(), false)
    }

    /// Stores every slide run's pointer for the region's base: the fast path's loop over
    /// the runs, the checked walk naming what is wrong when it does not accept them.
    static func slide(_ set: PrelinkedSet, memory: LaunchMemory, setPath: String) throws(ClosureError) {
        let writer = memory.regionWriter(set.rangePlan)
        if UnsafeFixupLoop.applyRebases(set.slideRuns, writer: writer, vmSize: set.rangeSize) { return }
        do throws(FixupFault) {
            try LaunchClosure.writeRebases(set.slideRuns, writer: writer, vmSize: set.rangeSize)
        } catch {
            throw .fixups(path: setPath, image: "the prelinked range", stream: .rebases, fault: error)
        }
    }

    /// The digest of the launch's memory (``LaunchMemory/writableDigest(slideDependent:)``),
    /// the slide locations as each image's own: comparable with the other paths' digests.
    static func digestOf(_ memory: LaunchMemory, _ set: PrelinkedSet) -> UInt64 {
        var locations: [[UInt64]] = set.closure.images.map { _ in [] }
        // Locations ascend, and so do the images' offsets: one cursor over the images.
        var image = 0
        try? FixupRunWalk(set.slideRuns).forEachRebase { _, _ in } _: { (location, _) in
            while image + 1 < set.imageOffsets.count, set.imageOffsets[image + 1] <= location { image += 1 }
            if set.imageOffsets[image] <= location { locations[image].append(location - set.imageOffsets[image]) }
        }
        return memory.writableDigest(slideDependent: locations)
    }
}
