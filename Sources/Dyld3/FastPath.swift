import ClosureCache
import LoaderCore
import ClosureFormat
import LaunchPlan
import LoaderSystem
import Pager
import LaunchMemory
import RuntimeServices
import SharedCache

/// The dyld3 fast path: validate a closure and apply it. No Mach-O parsing beyond each image's
/// own header (its plan checked against it on a second core while the images are mapped), no
/// path search, no symbol lookup: map the images as planned, write the resolved fixups, then
/// the launch's last steps (``Launcher``).
///
/// Every failure the closure causes before `main` (another request's binding, a stale image, a
/// plan the image does not have, a bad run or target) is a `ClosureError` naming the closure
/// file, thrown after everything mapped was released, so a caller can fall back to the slow
/// path. `LoadError` is left for failures of the launch itself (no address space, ...).
package enum FastPath {
    /// Launches `request` from the closure at `closurePath`, read
    /// (``ClosureLaunchDecoder/read(_:trusting:helper:check:beside:)``), mapped and applied with
    /// one ``LaunchHelper``: started when the closure is large, it decodes part of it, opens
    /// the images this thread has not as it maps them, checks the plans and writes part of the fixups.
    package static func launch(closurePath: String, request: LaunchOptions,
                              configuration: LaunchConfiguration = LaunchConfiguration()) throws -> Launch {
        try Launcher.run(ClosureLaunchSource(.file(closurePath)), request: request, configuration: configuration, helper: LaunchHelper())
    }

    /// Launches `request` from `closure` (read from `closurePath`, or built in memory and named so).
    package static func launch(_ closure: LaunchClosure, closurePath: String, request: LaunchOptions,
                              configuration: LaunchConfiguration = LaunchConfiguration()) throws -> Launch {
        try Launcher.run(ClosureLaunchSource(.decoded(closure, path: closurePath, opened: nil)), request: request,
                         configuration: configuration, helper: nil)
    }

    /// How many of `imageCount` images this thread opens before it maps: all, unless the helper
    /// runs; then the first quarter, about what it opens while the helper reads the rest of
    /// the body (the helper opens the others as this thread maps).
    static func openedBeforeMapping(_ imageCount: Int, helper: LaunchHelper?) -> Int {
        helper?.isRunning == true ? imageCount / 4 : imageCount
    }

    /// Writes the fixups of `images`. With `helper` running, they are split in two parts of
    /// about the same size of runs (a proxy for the pages they dirty), the second written by
    /// the helper, so the copy-on-write faults are taken on two CPUs; each image by one thread.
    /// An error in the first part is reported before one in the second, as with one thread.
    static func applyFixups(_ closure: LaunchClosure, images: [Int], memory: LaunchMemory, targetValues: [UInt64],
                            closurePath: String, helper: LaunchHelper?) throws(ClosureError) {
        guard helper?.isRunning == true, images.count >= 2 else {
            for index in images {
                try closure.applyFixups(ofImage: index, memory: memory, targetValues: targetValues, closurePath: closurePath)
            }
            return
        }
        let writers = images.map { memory.writer(image: $0) }
        let sizes = images.map { closure.images[$0].rebaseRuns.count + closure.images[$0].bindRuns.count }
        let total = sizes.reduce(0, +)
        var split = 0, firstPart = 0
        while split < images.count - 1, 2 * (firstPart + sizes[split]) <= total {
            firstPart += sizes[split]
            split += 1
        }
        let secondPart = split..<images.count
        @Sendable func apply(_ positions: Range<Int>) throws(ClosureError) {
            for position in positions {
                try closure.applyFixups(ofImage: images[position], writer: writers[position], targetValues: targetValues, closurePath: closurePath)
            }
        }
        try LaunchHelper.run(on: helper, helper: { Outcome { () throws(ClosureError) in try apply(secondPart) } }) {
            () throws(ClosureError) in try apply(0..<secondPart.lowerBound)
        }.helper.get()
    }

    /// The digest of `memory` after the closure's fixups and Objective-C writes, rewriting the
    /// locations they fixed up with pointers (decoded again, outside the timed launch).
    static func digestOf(_ memory: LaunchMemory, _ closure: LaunchClosure, closurePath: String) throws(LoadError) -> UInt64 {
        memory.writableDigest(slideDependent: try slideDependentLocations(closure, closurePath: closurePath),
                              loaderPointers: LaunchDigest.loaderPointers(closure.threadLocals.setups, hostServices: closure.threadLocals.hostServices, imageCount: closure.images.count))
    }

    /// Per image, the words whose value depends on the slide: those the closure's fixups and
    /// Objective-C writes point at an image, and the cache's images' pointers (its slide info).
    static func slideDependentLocations(_ closure: LaunchClosure, closurePath: String) throws(LoadError) -> [[UInt64]] {
        var fixups: [[ResolvedFixup]] = [], objc: [[ResolvedFixup]] = []
        do throws(ClosureError) {
            for index in closure.images.indices {
                fixups.append(try closure.fixups(ofImage: index, closurePath: closurePath))
                objc.append(closure.objc.bindRuns.isEmpty ? [] : try closure.objcWrites(ofImage: index, closurePath: closurePath))
            }
        } catch {
            throw LoadError.failed(path: closurePath, cause: error)
        }
        let later = LaunchDigest.laterWrites(objc: objc, threadLocals: closure.threadLocals.setups, imageCount: closure.images.count)
        var locations = LaunchDigest.slideDependentLocations(fixups, then: later)
        // The cache's images were fixed up when it was built: its slide info lists their pointers.
        if let cache = closure.sharedCache {
            do throws(ClosureError) {
                for (index, cached) in try SharedCacheRegion.slideLocations(cache, images: closure.images).enumerated() where !cached.isEmpty {
                    // A word the closure patches is what the patch makes it.
                    let patched = Set((fixups[index] + later[index]).map(\.vmOffset))
                    locations[index] = Array(Set(cached.filter { !patched.contains($0) } + locations[index])).sorted()
                }
            } catch {
                throw LoadError.failed(path: closurePath, cause: error)
            }
        }
        return locations
    }

    /// The first run, target or page index entry of `closure` that a page-in launch must
    /// refuse (``LaunchClosure/checkFixups(ofImage:closurePath:)``), in image order.
    static func firstRunFault(_ closure: LaunchClosure, closurePath: String) -> ClosureError? {
        do throws(ClosureError) {
            for index in closure.images.indices { try closure.checkFixups(ofImage: index, closurePath: closurePath) }
            return nil
        } catch {
            return error
        }
    }
}

/// A per-image closure (a file, or decoded in memory) as a source of images: its images opened,
/// identified and checked against their own load commands, mapped from those descriptors,
/// then fixed up from the closure's runs.
struct ClosureLaunchSource: LaunchSource {
    enum Input {
        /// The closure file at a path, read and decoded by the launch.
        case file(String)
        /// A decoded closure named `path`; `opened`: its first images' descriptors, opened and
        /// identified, and how many were hashed (nil: the launch opens them all).
        case decoded(LaunchClosure, path: String, opened: (files: [ImageDescriptor], hashed: Int)?)
    }

    let input: Input
    var mode: String { "dyld3" }

    init(_ input: Input) { self.input = input }

    func map(_ launch: inout LaunchState) throws -> MappedLaunch {
        let request = launch.request, checks = launch.configuration.identityChecks, helper = launch.helper
        switch input {
        case let .file(path):
            var hashed = 0
            // A page-in launch's run check runs as soon as the closure is decoded: on the
            // helper while this thread opens and identifies the images, when the helper runs.
            let runCheck: (@Sendable (LaunchClosure) -> ClosureError?)? = request.fixups == .pageIn ? { @Sendable closure in
                FastPath.firstRunFault(closure, closurePath: path)
            } : nil
            var clock = launch.clock
            // A closure bound into the shared cache: its range is mapped on the helper from as
            // soon as the body's header names the cache, while this thread reads the rest.
            var early: EarlyCache?
            let (closure, (closureTime, files)) = try ClosureLaunchDecoder.read(path, trusting: launch.configuration.trustKey, helper: helper, check: runCheck,
                                                        indexed: { (index) throws(ClosureError) -> Bool in
                guard let cache = index.sharedCache, request.fixups != .pageIn else { return false }
                early = try EarlyCache.begin(cache, closurePath: path, helper: helper)
                return true
            }) { (table, file) throws(ClosureError) in
                try Launcher.checkBinding(table.binding, request: request, closurePath: path)
                try table.checkRoots(closurePath: path)
                let closureTime = clock.lap()
                return (closureTime, try table.openImages(0..<FastPath.openedBeforeMapping(table.images.count, helper: helper),
                                                          closurePath: path, closureStatus: file, checks: checks,
                                                          readAhead: Self.readAhead(request, helper: helper) == .whileOpening,
                                                          hashedImages: &hashed))
            }
            launch.clock = clock
            launch.report.timings[.closure] = closureTime
            launch.report.imagesHashed = hashed
            return try map(closure, files: files, path: path, runsChecked: true, early: early, &launch)
        case let .decoded(closure, path, opened):
            try Launcher.checkBinding(closure.binding, request: request, closurePath: path)
            try closure.checkRoots(closurePath: path)
            launch.report.timings[.closure] = launch.clock.lap()
            var hashed = opened?.hashed ?? 0
            let files = try opened?.files ?? closure.openImages(closurePath: path, checks: checks,
                                                                readAhead: Self.readAhead(request, helper: helper) == .whileOpening,
                                                                hashedImages: &hashed)
            launch.report.imagesHashed = hashed
            return try map(closure, files: files, path: path, runsChecked: false, &launch)
        }
    }

    /// The mapping of `closure` from `files`, its first images' descriptors
    /// (``FastPath/openedBeforeMapping(_:helper:)``): the others opened and the plans checked
    /// beside the mapping. `runsChecked`: a page-in launch's run check was made on decoding.
    /// `early`: the shared cache's range being mapped on the helper (begun here for an eager
    /// launch of a closure bound into the cache when decoding did not).
    func map(_ closure: LaunchClosure, files: [ImageDescriptor], path: String, runsChecked: Bool, early: EarlyCache? = nil,
             _ launch: inout LaunchState) throws -> MappedLaunch {
        var early = early
        let request = launch.request, checks = launch.configuration.identityChecks, helper = launch.helper
        launch.report.images = closure.images.map(\.path)
        try Launcher.checkSigningPolicy(closure, request: request)
        if early == nil, request.fixups != .pageIn, let cache = closure.sharedCache {
            early = try EarlyCache.begin(cache, closurePath: path, helper: helper)
        }
        var files = files, hashed = 0
        // With the cache's range mapping on the helper, this thread opens every image itself
        // (the cached ones need no file).
        if files.count < closure.images.count, helper?.isRunning != true || early != nil {
            files += try closure.openImages(files.count..<closure.images.count, closurePath: path, checks: checks,
                                            readAhead: early == nil && Self.readAhead(request, helper: helper) == .whileOpening, hashedImages: &hashed)
        }
        // A page-in launch applies its fixups on first touch, after `main` has started: every
        // run, target and page index entry it can meet is checked before anything is mapped,
        // written or run, as an eager launch checks them before its first store.
        if request.fixups == .pageIn, !runsChecked, let fault = FastPath.firstRunFault(closure, closurePath: path) { throw fault }
        // The helper opens and identifies the images this thread has not, handing each over as
        // this thread maps them in order, then checks the plans. Both only read the descriptors;
        // nothing is written or run before a stale image or a disagreement is known.
        let handOff = files.count < closure.images.count ? DescriptorHandOff(first: files.count, count: closure.images.count) : nil
        let readsAheadOnHelper = Self.readAhead(request, helper: helper) == .onHelper
        let opened = files
        var report = launch.report
        var written: [Bool] = []
        let mapped: Result<(LaunchMemory, PageInFixups.Plan?), any Error>, checked: Outcome<PlanCheck>
        if let early {
            (mapped, checked) = Self.mapBesideCache(closure, early, files: files, path: path, request: request, written: &written)
        } else {
            (mapped, checked) = LaunchHelper.run(on: helper, helper: {
                Outcome { () throws(ClosureError) -> PlanCheck in
                    var files = opened, hashed = 0
                    if let handOff {
                        files += try closure.openImages(handOff.first..<handOff.count, closurePath: path, checks: checks,
                                                        handOff: handOff, hashedImages: &hashed)
                    }
                    if readsAheadOnHelper { Self.readAhead(closure, files: files) }
                    return PlanCheck(hashedImages: hashed, disagreement: Self.planDisagreement(closure, files: files))
                }
            }) {
                Result { () throws -> (LaunchMemory, PageInFixups.Plan?) in
                    try Self.mapImages(closure, path: path, files: files, handOff: handOff, request: request, report: &report)
                }
            }
        }
        launch.report = report
        // What the helper found comes first: a stale image, then a plan the image disagrees
        // with (the cause of any mapping error), then the mapping's own error.
        let (memory, pageIn) = try Self.planned(mapped, checked: checked, closure, path: path)
        return try memory.releasedOnFailure { () throws -> MappedLaunch in
            if case let .success(check) = checked {
                launch.report.imagesHashed = (launch.report.imagesHashed ?? 0) + hashed + check.hashedImages
                if let disagreement = check.disagreement {
                    throw ClosureError.plan(path: path, image: closure.images[disagreement.image].path, disagreement.what)
                }
            }
            launch.report.slide = memory.images[0].slide
            if let range = memory.sharedRange { launch.report.sharedCache = (memory.images.count { $0.inSharedCache }, range.base) }
            launch.report.timings[.mapping] = launch.clock.lap()
            if request.verifyPages {
                launch.report.pagesVerified = try EagerPageVerification.verify(memory, signatures: closure.mappedSignatures).pages
                launch.report.timings[.parsing] = launch.clock.lap()
            }
            return MappedLaunch(closure: closure, path: path, memory: memory, protections: .segments, pagedIn: pageIn != nil,
                                pending: .images(closure.images.indices.filter { !(pageIn?.indexed[$0] ?? false) && !(written.indices.contains($0) && written[$0]) })) {
                (memory) throws(LoadError) in
                try FastPath.digestOf(memory, closure, closurePath: path)
            }
        }
    }

    func writeFixups(_ mapped: MappedLaunch, _ launch: inout LaunchState) throws {
        guard case let .images(eager) = mapped.pending else { return }
        try Self.writeRuns(mapped.closure, images: eager, memory: mapped.memory, path: mapped.path, &launch)
        launch.report.rebases = mapped.closure.totalRebases
    }

    /// Writes the runs of `closure`'s `images` (the shared cache's patched pages opened
    /// first), then its Objective-C writes: what a closure leaves to write once its images,
    /// and the cache, are mapped.
    static func writeRuns(_ closure: LaunchClosure, images: [Int], memory: LaunchMemory, path: String, _ launch: inout LaunchState) throws {
        let values = closure.bindTargetValues(memory)
        if closure.sharedCache != nil { try memory.openForPatches(try closure.cachePatchPages(closurePath: path)) }
        try FastPath.applyFixups(closure, images: images, memory: memory, targetValues: values, closurePath: path, helper: launch.helper)
        launch.report.timings[.bind] = launch.clock.lap()
        if !closure.objc.bindRuns.isEmpty {
            for index in closure.objc.bindRuns.indices {
                try closure.applyObjCWrites(ofImage: index, memory: memory, targetValues: values, closurePath: path)
            }
            launch.report.timings[.objc] = launch.clock.lap()
        }
        launch.report.binds = closure.totalBinds
    }

    /// An eager launch of a closure bound into the shared cache, its range mapping on the
    /// helper: every image already opened and identified, the app's own images are read ahead,
    /// their plans checked and the images mapped here, their fixups written (they point into the cache by address
    /// alone) unless a plan disagrees or the pages are verified first; then the range is
    /// joined. What ``planned(_:checked:_:path:)`` takes.
    static func mapBesideCache(_ closure: LaunchClosure, _ early: EarlyCache, files: [ImageDescriptor], path: String, request: LaunchOptions,
                               written: inout [Bool]) -> (Result<(LaunchMemory, PageInFixups.Plan?), any Error>, Outcome<PlanCheck>) {
        readAhead(closure, files: files)
        let disagreement = planDisagreement(closure, files: files)
        var own: [Bool] = []
        let mapped = Result { () throws -> (LaunchMemory, PageInFixups.Plan?) in
            let memory = try LaunchMemory(plans: closure.images.map(\.plan), descriptors: files, firstSlide: request.slide,
                                          shared: LaunchMemory.SharedImages(range: nil, bases: try early.opened.bases(closure.images)))
            if disagreement == nil, !request.verifyPages { own = writeOwnFixups(closure, memory: memory, path: path) }
            return (memory, nil)
        }
        written = own
        return (mapped, early.take().map { PlanCheck(hashedImages: 0, disagreement: disagreement, cacheRange: $0) })
    }

    /// The app's own images' fixups, written while the helper maps the cache's range: per
    /// image, whether its are written. The first run that faults is left, with the rest, to
    /// the fixup step, which reports it in its order.
    static func writeOwnFixups(_ closure: LaunchClosure, memory: LaunchMemory, path: String) -> [Bool] {
        var written = [Bool](repeating: false, count: closure.images.count)
        let values = closure.bindTargetValues(memory)
        for index in closure.images.indices where closure.images[index].cacheSlot == nil {
            guard (try? closure.applyFixups(ofImage: index, memory: memory, targetValues: values, closurePath: path)) != nil else { break }
            written[index] = true
        }
        return written
    }

    /// The memory the mapping gave, unless the helper found a stale image (reported first) or
    /// the mapping failed: a mapping the plan made fail is a `ClosureError` naming the closure
    /// file, so that `auto` falls back, and a plan the image's load commands disagree with is
    /// its cause, reported first. Memory mapped for a launch refused here is released.
    static func planned(_ mapped: Result<(LaunchMemory, PageInFixups.Plan?), any Error>, checked: Outcome<PlanCheck>,
                        _ closure: LaunchClosure, path: String) throws -> (LaunchMemory, PageInFixups.Plan?) {
        let check: PlanCheck
        switch checked {
        case let .failure(stale):
            if case let .success((memory, _)) = mapped { try memory.releasedOnFailure { () throws(ClosureError) in throw stale } }
            throw stale
        case let .success(done): check = done
        }
        guard case let .failure(error) = mapped else {
            let (memory, pageIn) = try mapped.get()
            if let range = check.cacheRange { memory.attachShared(range) }
            return (memory, pageIn)
        }
        check.cacheRange?.release()
        guard case let .mapping(image, reason) = error as? LoadError else { throw error }
        if let disagreement = check.disagreement {
            throw ClosureError.plan(path: path, image: closure.images[disagreement.image].path, disagreement.what)
        }
        throw ClosureError.mapping(path: path, image: image, what: reason)
    }

    /// The shared cache's range being mapped on the helper (``LaunchHelper/begin(on:_:)``)
    /// while the launch reads its closure and maps the app's own images: its longest step (an
    /// `mprotect` per protection run) beside the rest.
    /// Its one owner: the range is given to the launch by ``take()``, or given back when the
    /// launch stops before taking it (an error on any path).
    final class EarlyCache {
        let opened: SharedCacheRegion.Opened
        private let range: LaunchHelper.Begun<Outcome<LaunchMemory.SlidRange>>
        private var taken = false

        private init(opened: SharedCacheRegion.Opened, range: LaunchHelper.Begun<Outcome<LaunchMemory.SlidRange>>) {
            (self.opened, self.range) = (opened, range)
        }

        /// Opens the copy of `cache` slid for the boot (refused as the closure at `closurePath`)
        /// and starts mapping its range on `helper`.
        static func begin(_ cache: ClosureSharedCache, closurePath: String, helper: LaunchHelper?) throws(ClosureError) -> EarlyCache {
            let opened = try SharedCacheRegion.open(cache, closurePath: closurePath)
            helper?.start()
            return EarlyCache(opened: opened, range: LaunchHelper.begin(on: helper) {
                Outcome { () throws(ClosureError) -> LaunchMemory.SlidRange in try opened.mapRange() }
            })
        }

        /// Joins the mapping: the range, now the caller's.
        func take() -> Outcome<LaunchMemory.SlidRange> {
            taken = true
            return range.join()
        }

        deinit {
            if !taken, case let .success(range) = range.join() { range.release() }
        }
    }

    /// What the helper found beside the mapping: how many images it hashed while identifying
    /// them, and the first plan an image's load commands disagree with.
    struct PlanCheck: Sendable {
        var hashedImages: Int
        var disagreement: (image: Int, what: PlanDisagreement)?
        /// The shared cache's range, when the helper mapped it.
        var cacheRange: LaunchMemory.SlidRange?
    }

    /// Maps the closure's images: eagerly, or for `--fixups page-in` with the pages that receive
    /// fixups reserved, registered with a userfaultfd and made live before anything can touch
    /// them. Where that fails, the memory is mapped again for an eager launch (a hand-off keeps
    /// what it handed over), the reason kept in the report.
    static func mapImages(_ closure: LaunchClosure, path: String, files: [ImageDescriptor], handOff: DescriptorHandOff?,
                          request: LaunchOptions, report: inout LaunchReport) throws -> (LaunchMemory, PageInFixups.Plan?) {
        let plans = closure.images.map(\.plan)
        // The shared cache's range, mapped for each attempt (a failed one releases it).
        func shared() throws(ClosureError) -> LaunchMemory.SharedImages? {
            try closure.sharedCache.map { (cache) throws(ClosureError) in try SharedCacheRegion.map(cache, images: closure.images, closurePath: path) }
        }
        guard request.fixups == .pageIn else {
            return (try LaunchMemory(plans: plans, descriptors: files, handOff: handOff, firstSlide: request.slide, shared: shared()), nil)
        }
        let pageSize = LaunchMemory.pageSize
        let plan = try PageInFixups.plan(closure, pageSize: pageSize)
        switch FixupPager.open(signatures: closure.mappedSignatures) {
        case let .failure(failure):
            report.pageInFallback = .userfaultfdUnavailable("\(failure)")
        case let .success(pager):
            let pagedIn = PageInFixups.map(with: pager, pages: plan.pageCount, faultAround: request.faultAround, report: &report) {
                try LaunchMemory(plans: plans, descriptors: files, handOff: handOff, firstSlide: request.slide, pageIn: (pager, plan.ranges),
                                 shared: shared())
            } source: { memory in
                PageInFixups(closure, plan: plan, targetValues: closure.bindTargetValues(memory), pageSize: pageSize)
            }
            if let pagedIn { return (pagedIn, plan) }
        }
        return (try LaunchMemory(plans: plans, descriptors: files, handOff: handOff, firstSlide: request.slide, shared: shared()), nil)
    }

    /// When the images are read ahead (``ImagePlan/readAheadRange(deferred:)``): never under
    /// page-in; on the helper before its plan check (the ≈ 1 µs a call costs is off the launch
    /// thread); else as each image is opened.
    enum ReadAhead { case never, whileOpening, onHelper }

    /// Where `request`'s launch reads ahead, given its `helper`.
    static func readAhead(_ request: LaunchOptions, helper: LaunchHelper?) -> ReadAhead {
        request.fixups == .pageIn ? .never : helper?.isRunning == true ? .onHelper : .whileOpening
    }

    /// Asks the kernel to read ahead each image of `closure` from its descriptor in `files`.
    static func readAhead(_ closure: LaunchClosure, files: [ImageDescriptor]) {
        for (image, file) in zip(closure.images, files) where image.cacheSlot == nil {
            if let range = image.plan.readAheadRange() { file.readAhead(range) }
        }
    }

    /// The first image whose plan is not the one its own header and load commands give (read
    /// through `files`, the descriptors the launch maps from), and how.
    static func planDisagreement(_ closure: LaunchClosure, files: [ImageDescriptor]) -> (image: Int, what: PlanDisagreement)? {
        closure.images.indices.lazy.filter { closure.images[$0].cacheSlot == nil }.compactMap { index in
            closure.images[index].planDisagreement(arch: closure.arch, file: files[index]).map { (index, $0) }
        }.first
    }
}
