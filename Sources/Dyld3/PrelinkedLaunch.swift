import ClosureCache
import LoaderCore
import ClosureFormat
import LaunchPlan
import LoaderSystem
import Pager
import LaunchMemory
import RuntimeServices
import MachOReader

/// The launch of a prelinked set (docs/prelinked.md): the set file checked like a closure
/// (ownership, checksum, binding; with `--trust`, its signature and its data's signed
/// SHA-256), every source image by the status of its path (no open, no mapping). Its copy
/// slid for this boot is mapped as it lies, in one `mmap`, with its protections, while the
/// helper makes those checks; without one the set's data is mapped in one `mmap` and slid
/// (or paged in), then protected. Then the launch's last steps, as the fast path runs them.
///
/// Every refusal before `main` is a `ClosureError` naming the set file, thrown after
/// everything mapped was released, so `auto` can fall back to the per-image closure.
package enum PrelinkedLaunch {
    /// The report's mode for a launch from a prelinked set.
    package static let mode = "prelinked"

    /// Launches `request` from the set at `setPath`.
    package static func launch(setPath: String, request: LaunchOptions, configuration: LaunchConfiguration = LaunchConfiguration()) throws -> Launch {
        try Launcher.run(PrelinkedLaunchSource(setPath: setPath), request: request, configuration: configuration, helper: LaunchHelper())
    }

    /// The set's range, once the set is checked, and whether it is paged in: the copy slid for
    /// this boot mapped early (`early`: the copy, its range unless taken, whether it fits),
    /// else the copy mapped now (written first when none is usable), else the set's own data.
    /// `shared`: the bases of the images in the shared cache's range (a set bound into it).
    static func mapRange(_ opened: PrelinkedSetFile.Opened, early: (copy: SlidPrelinkedSetFile.Opened, range: LaunchMemory.SlidRange?, fits: Bool)?,
                         shared: [UInt64?], request: LaunchOptions, checks: LaunchConfiguration, report: inout LaunchReport) throws -> (LaunchMemory, Bool) {
        let set = opened.set
        if let early {
            if let range = early.range {
                guard !early.fits else {
                    report.slidForBoot = true
                    return (range.adopt(plans: set.closure.images.map(\.plan), offsets: set.imageOffsets), false)
                }
                // Not this launch's copy after all: the way below decides again, writing the
                // copy anew when it is the copy that is wrong.
                range.release()
            } else {
                report.slideAtLaunch = .rangeTaken(base: early.copy.header.base)
                return try map(opened, shared: shared, request: request, report: &report)
            }
        }
        if let slid = try mapSlidForBoot(opened, request: request, checks: checks, report: &report) { return (slid, false) }
        return try map(opened, shared: shared, request: request, report: &report)
    }

    /// Whether `copy`, mapped early, is this launch's after all, the set decoded: not when the set
    /// changed between the reads, the protections are not the plans', a thread-local write lands
    /// read-only, or a slide is forced elsewhere (the sequential way then says why).
    static func fits(_ copy: SlidPrelinkedSetFile.Opened, _ opened: PrelinkedSetFile.Opened, request: LaunchOptions) -> Bool {
        let set = opened.set
        guard copy.header.setChecksum == opened.header.checksum, copy.header.setDataHash == opened.header.dataHash,
              copy.rangeSize == set.rangeSize, let first = set.closure.images.first else { return false }
        return copy.header.protections == SlidPrelinkedSetFile.protections(of: set) && firstReadOnlyThreadLocalWrite(set.closure) == nil
            && forcedSlideMismatch(request, first: first.plan, copy: copy) == nil
    }

    /// Why a slide the request forces is not the copy's; nil when none is forced or it is.
    static func forcedSlideMismatch(_ request: LaunchOptions, first: ImagePlan, copy: SlidPrelinkedSetFile.Opened) -> SlideAtLaunchReason? {
        guard let slide = request.slide, first.preferredBase &+ slide != copy.header.base else { return nil }
        return .slideForced(slide)
    }

    /// The set's copy slid for this boot, found before the set is decoded (by the identity its
    /// header declares): not with `--slide-per-launch`, `--trust` or `--hash-images`.
    static func earlyCopy(setPath: String, identity: PrelinkedSetFile.DeclaredIdentity, request: LaunchOptions,
                          checks: LaunchConfiguration) -> SlidPrelinkedSetFile.Opened? {
        guard !request.slidePerLaunch, checks.trustKey == nil, !checks.alwaysHashContent else { return nil }
        return try? SlidPrelinkedSetFile.open(ClosureCache.slidSetPath(forSet: setPath), setChecksum: identity.checksum,
                                              setDataHash: identity.dataHash, rangeSize: identity.dataSize).get()
    }

    /// Maps the set slid for this boot (``SlidPrelinkedSetFile``) at its base, written first
    /// when there is none yet; nil, the reason in the report, when the launch slides the set
    /// itself (``slidCopy(_:request:checks:report:)``, a slide forced elsewhere, the range taken).
    static func mapSlidForBoot(_ opened: PrelinkedSetFile.Opened, request: LaunchOptions, checks: LaunchConfiguration,
                               report: inout LaunchReport) throws -> LaunchMemory? {
        let set = opened.set, plans = set.closure.images.map(\.plan)
        guard let copy = slidCopy(opened, request: request, checks: checks, report: &report), let first = plans.first else { return nil }
        if let mismatch = forcedSlideMismatch(request, first: first, copy: copy) {
            report.slideAtLaunch = mismatch
            return nil
        }
        guard let range = try copy.mapRange() else {
            report.slideAtLaunch = .rangeTaken(base: copy.header.base)
            return nil
        }
        report.slidForBoot = true
        return range.adopt(plans: plans, offsets: set.imageOffsets)
    }

    /// The set's copy slid for this boot, opened and checked, written first when none is usable;
    /// nil, the reason in the report, when this launch must slide the set itself:
    /// `--slide-per-launch`, a trusting launch (the signature covers the set's own data), a
    /// thread-local write into a read-only segment, a copy that cannot be written.
    static func slidCopy(_ opened: PrelinkedSetFile.Opened, request: LaunchOptions, checks: LaunchConfiguration,
                         report: inout LaunchReport) -> SlidPrelinkedSetFile.Opened? {
        let set = opened.set
        func slideAtLaunch(_ why: SlideAtLaunchReason) -> SlidPrelinkedSetFile.Opened? {
            report.slideAtLaunch = why
            return nil
        }
        guard !request.slidePerLaunch else { return slideAtLaunch(.slidePerLaunch) }
        guard checks.trustKey == nil else { return slideAtLaunch(.trusted) }
        guard !set.closure.images.isEmpty else { return slideAtLaunch(.noImage) }
        guard !set.bindsIntoSharedCache else { return slideAtLaunch(.sharedCache) }
        if let unwritable = firstReadOnlyThreadLocalWrite(set.closure) { return slideAtLaunch(.threadLocalWriteReadOnly(unwritable)) }
        let path = ClosureCache.slidSetPath(forSet: opened.path)
        func usable() -> Result<SlidPrelinkedSetFile.Opened, ClosureError> {
            SlidPrelinkedSetFile.open(path, for: opened).flatMap { copy in
                Result { () throws(ClosureError) in
                    if checks.alwaysHashContent { try copy.checkData() }
                    return copy
                }
            }
        }
        switch usable() {
        case let .success(found): return found
        case let .failure(unusable):
            guard request.slide == nil else { return slideAtLaunch(.forcedAndUnusable("\(unusable)")) }
            do throws(ClosureError) {
                try SlidPrelinkedSetFile.write(for: opened, to: path)
            } catch {
                return slideAtLaunch(.unwritable(unusable: "\(unusable)", error: "\(error)"))
            }
            guard case let .success(written) = usable() else { return slideAtLaunch(.writtenUnopenable) }
            report.slidSetWritten = true
            return written
        }
    }

    /// The main image's slide in the set's copy slid for this boot (written first when there is
    /// none), for `compare` to put dyld2 there; nil when a launch would slide the set itself.
    package static func slideForBoot(setPath: String, request: LaunchOptions, configuration checks: LaunchConfiguration = LaunchConfiguration()) throws -> UInt64? {
        var unforced = request
        unforced.slide = nil
        let opened = try PrelinkedSetFile.open(setPath, trusting: checks.trustKey)
        try Launcher.checkBinding(opened.set.closure.binding, request: request, closurePath: setPath)
        var report = LaunchReport(mode: mode)
        guard let first = opened.set.closure.images.first, let copy = slidCopy(opened, request: unforced, checks: checks, report: &report) else { return nil }
        return copy.header.base &- first.plan.preferredBase
    }

    /// The first thread-local write (a descriptor, or the host services slot) into a
    /// segment whose final protection is not writable, named; nil when there is none.
    static func firstReadOnlyThreadLocalWrite(_ closure: LaunchClosure) -> String? {
        func writable(_ image: Int, _ offset: UInt64, _ count: UInt64) -> Bool {
            guard image < closure.images.count else { return false }
            return closure.images[image].plan.segments.contains { segment in
                offset >= segment.vmOffset && offset <= segment.vmOffset + segment.vmSize && count <= segment.vmOffset + segment.vmSize - offset
                    && LaunchMemory.finalProtection(segment).contains(.write)
            }
        }
        let locals = closure.threadLocals
        if let slot = locals.hostServices, !writable(slot.image, slot.vmOffset, HostServicesSlot.size) {
            return "the host services slot of image \(slot.image)"
        }
        for setup in locals.setups {
            for descriptor in setup.descriptors where !writable(setup.image, descriptor, 16) {
                return "a descriptor at +\(hex(descriptor)) of image \(setup.image)"
            }
        }
        return nil
    }

    /// Maps the set, and whether it is paged in: for `--fixups page-in` with the pages that
    /// receive slide stores paged in (``mapPagedIn(_:request:report:)``), else eagerly (a set
    /// bound into the shared cache, whose images lie at `shared`, always).
    static func map(_ opened: PrelinkedSetFile.Opened, shared: [UInt64?], request: LaunchOptions, report: inout LaunchReport) throws -> (LaunchMemory, Bool) {
        if request.fixups == .pageIn {
            if opened.set.bindsIntoSharedCache {
                report.pageInFallback = .sharedCache
            } else if let pagedIn = try mapPagedIn(opened, request: request, report: &report) {
                return (pagedIn, true)
            }
        }
        let set = opened.set, plans = set.closure.images.map(\.plan)
        do throws(LoadError) {
            return (try LaunchMemory.mapPrelinked(plans: plans, offsets: set.imageOffsets, rangeSize: set.rangeSize,
                                                  fd: opened.fd, dataOffset: opened.header.dataOffset, firstSlide: request.slide, shared: shared), false)
        } catch {
            guard case let .mapping(image, reason) = error else { throw error }
            throw ClosureError.mapping(path: opened.path, image: image, what: reason)
        }
    }

    /// The set mapped with the pages that receive slide stores reserved, registered with a
    /// userfaultfd and made live (every run and page checked first); nil, the reason in the
    /// report, where that cannot be done.
    static func mapPagedIn(_ opened: PrelinkedSetFile.Opened, request: LaunchOptions, report: inout LaunchReport) throws -> LaunchMemory? {
        let set = opened.set, setPath = opened.path, plans = set.closure.images.map(\.plan)
        try set.checkSlideRuns(path: setPath)
        let index = try set.slidePageIndex.pages(path: setPath)
        let pageSize = LaunchMemory.pageSize
        guard index.pageSize == pageSize else {
            report.pageInFallback = .otherPageSize(pageSize)
            return nil
        }
        let pager: FixupPager, descriptor: ImageDescriptor
        switch FixupPager.open() {
        case let .failure(failure):
            report.pageInFallback = .userfaultfdUnavailable("\(failure)")
            return nil
        case let .success(openedPager): pager = openedPager
        }
        do throws(LoadError) {
            descriptor = try ImageDescriptor.open(setPath)
        } catch {
            pager.close()
            report.pageInFallback = .setUnopenable("\(error)")
            return nil
        }
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
        return PageInFixups.map(with: pager, pages: index.pages.count, faultAround: request.faultAround, report: &report) {
            try LaunchMemory.mapPrelinked(plans: plans, offsets: set.imageOffsets, rangeSize: set.rangeSize, fd: opened.fd,
                                          dataOffset: opened.header.dataOffset, firstSlide: request.slide, pageIn: (pager, ranges, setPath, descriptor))
        } source: { _ in
            PageInFixups(slideRuns: set.slideRuns, pages: index.pages, vmSize: set.rangeSize, path: setPath, pageSize: pageSize)
        }
    }

    /// A set opened and checked: how many source images were hashed, whether the early copy
    /// fits it, and for a set bound into the shared cache, the cache being mapped and the base
    /// of each of the set's images in it (nil: in the set's range).
    typealias CheckedSet = (opened: PrelinkedSetFile.Opened, hashed: Int, fits: Bool, cache: (early: ClosureLaunchSource.EarlyCache, bases: [UInt64?])?)

    /// The shared cache's range a set's decoding began to map (``PrelinkedSetFile/open(_:trusting:sharedCache:)``).
    final class CacheBeginning: @unchecked Sendable {
        var early: ClosureLaunchSource.EarlyCache?
    }

    /// Stores every slide run's pointer for the region's base (``FixupRunWalk``).
    static func slide(_ set: PrelinkedSet, memory: LaunchMemory, setPath: String) throws(ClosureError) {
        let writer = memory.regionWriter(set.rangePlan)
        do throws(FixupFault) {
            try LaunchClosure.writeRebases(set.slideRuns, writer: writer, vmSize: set.rangeSize)
        } catch {
            throw .fixups(path: setPath, image: "the prelinked range", stream: .rebases, fault: error)
        }
    }

    /// The digest of the launch's memory (``LaunchMemory/writableDigest(slideDependent:)``),
    /// the slide locations as each image's own: comparable with the other paths' digests. A
    /// set bound into the shared cache adds what its closure's runs and the cache's slide write.
    static func digestOf(_ memory: LaunchMemory, _ set: PrelinkedSet, setPath: String) throws(LoadError) -> UInt64 {
        var locations: [[UInt64]] = set.closure.images.map { _ in [] }
        // Locations ascend, and so do the images' offsets: one cursor over the images.
        var image = 0
        try? FixupRunWalk(set.slideRuns).forEachRebase { _, _ in } _: { (location, _) in
            while image + 1 < set.imageOffsets.count, set.imageOffsets[image + 1] <= location { image += 1 }
            if set.imageOffsets[image] <= location { locations[image].append(location - set.imageOffsets[image]) }
        }
        if set.bindsIntoSharedCache {
            let launched = try FastPath.slideDependentLocations(set.closure, closurePath: setPath)
            locations = zip(locations, launched).map { Array(Set($0 + $1)).sorted() }
        }
        return memory.writableDigest(slideDependent: locations,
                                     loaderPointers: LaunchDigest.loaderPointers(set.closure.threadLocals.setups, hostServices: set.closure.threadLocals.hostServices, imageCount: set.closure.images.count))
    }
}

/// A prelinked set as a source of images (``PrelinkedLaunch``).
struct PrelinkedLaunchSource: LaunchSource {
    let setPath: String
    var mode: String { PrelinkedLaunch.mode }

    func map(_ launch: inout LaunchState) throws -> MappedLaunch {
        let request = launch.request, configuration = launch.configuration, setPath = setPath
        guard !request.verifyPages else {
            throw ClosureError.incompatible(path: setPath, what: "--verify-pages checks the images' own pages, which a prelinked set does not map")
        }
        // The copy slid for this boot is mapped and protected here while the helper opens and
        // checks the set and its source images; then the copy is checked against the set.
        // Without a copy this thread opens and checks the set itself: a set bound into the
        // shared cache then has the helper map the cache's range as soon as it is decoded.
        let helper = launch.helper
        let declared = PrelinkedSetFile.declaredIdentity(setPath)
        let early = declared.flatMap { PrelinkedLaunch.earlyCopy(setPath: setPath, identity: $0, request: request, checks: configuration) }
        if early != nil { helper?.start() }
        let (trust, alwaysHash, copy) = (HelperHandoff(configuration.trustKey), configuration.alwaysHashContent, HelperHandoff(early))
        let idleHelper = HelperHandoff(early == nil ? helper : nil)
        let (earlyRange, checked) = try LaunchHelper.run(on: helper, helper: {
            Outcome { () throws(ClosureError) -> HelperHandoff<PrelinkedLaunch.CheckedSet> in
                // The cache's range maps from as soon as the set's closure names the cache.
                let began = PrelinkedLaunch.CacheBeginning()
                let opened = try PrelinkedSetFile.open(setPath, trusting: trust.value) { (cache) throws(ClosureError) in
                    began.early = try ClosureLaunchSource.EarlyCache.begin(cache, closurePath: setPath, helper: idleHelper.value)
                }
                try Launcher.checkBinding(opened.set.closure.binding, request: request, closurePath: setPath)
                let cache = try began.early.map { early throws(ClosureError) in (early, try early.opened.bases(opened.set.closure.images)) }
                // Trusting a key, the data is what was signed: its SHA-256, at every launch.
                if alwaysHash || trust.value != nil { try opened.checkData() }
                var hashed = 0
                try opened.set.checkSources(setPath: setPath, builtAt: opened.builtAt, alwaysHash: alwaysHash, hashedImages: &hashed)
                return HelperHandoff((opened, hashed, copy.value.map { PrelinkedLaunch.fits($0, opened, request: request) } ?? false, cache))
            }
        }, body: { () throws(ClosureError) -> LaunchMemory.SlidRange? in try early?.mapRange() })
        // Until the set is known and checked, the early range is released on any refusal;
        // then mapRange adopts it or releases it before anything else can fail.
        let handoff = try earlyRange.releasedOnFailure { () throws -> PrelinkedLaunch.CheckedSet in
            let handoff = try checked.get().value
            try Launcher.checkSigningPolicy(handoff.opened.set.closure, request: request)
            return handoff
        }
        let set = handoff.opened.set
        launch.report.imagesHashed = handoff.hashed
        launch.report.timings[.closure] = launch.clock.lap()
        launch.report.images = set.closure.images.map(\.path)
        // A set bound into the shared cache: the cache's range maps on the helper (its UUID
        // checked, the closures' ownership rule held) while this thread maps the set.
        let cache = handoff.cache
        let (memory, pagedIn) = try PrelinkedLaunch.mapRange(handoff.opened, early: early.map { ($0, earlyRange, handoff.fits) }, shared: cache?.bases ?? [],
                                                             request: request, checks: configuration, report: &launch.report)
        return try memory.releasedOnFailure { () throws -> MappedLaunch in
            if let cache = cache?.early {
                let range = try cache.take().get()
                memory.attachShared(range)
                launch.report.sharedCache = (memory.images.count { $0.inSharedCache }, range.base)
            }
            let slidForBoot = launch.report.slidForBoot
            if slidForBoot, request.fixups == .pageIn { launch.report.pageInFallback = .slidForBoot }
            launch.report.slide = memory.images[0].slide
            launch.report.timings[.mapping] = launch.clock.lap()
            launch.report.rebases = slidForBoot ? 0 : set.slideCount
            return MappedLaunch(closure: set.closure, path: setPath, memory: memory, protections: slidForBoot ? .asMapped : .prelinkedRange,
                                pagedIn: pagedIn, pending: pagedIn || slidForBoot ? .none : .slide(set)) { (memory) throws(LoadError) in
                try PrelinkedLaunch.digestOf(memory, set, setPath: setPath)
            }
        }
    }

    func writeFixups(_ mapped: MappedLaunch, _ launch: inout LaunchState) throws {
        guard case let .slide(set) = mapped.pending else { return }
        try PrelinkedLaunch.slide(set, memory: mapped.memory, setPath: setPath)
        launch.report.timings[.rebase] = launch.clock.lap()
        // Bound into the shared cache: the words pointing there, the cache's patches, the
        // Objective-C writes (the runs the set's closure keeps).
        if set.bindsIntoSharedCache {
            try ClosureLaunchSource.writeRuns(set.closure, images: Array(set.closure.images.indices), memory: mapped.memory, path: setPath, &launch)
        }
    }
}

extension Optional where Wrapped == LaunchMemory.SlidRange {
    /// What `body` returns; when it throws, the range (if any) is released first.
    func releasedOnFailure<Value>(_ body: () throws -> Value) throws -> Value {
        do {
            return try body()
        } catch {
            self?.release()
            throw error
        }
    }
}
