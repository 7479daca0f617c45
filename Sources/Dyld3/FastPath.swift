import LaunchClosure
import LoaderCore
import ClosureFormat
import LaunchPlan

/// The dyld3 fast path: validate a closure and apply it. No Mach-O parsing beyond each
/// image's own header (read through the descriptor it is mapped from, to check the
/// closure's mapping plan against it, on a second core while the images are mapped), no
/// path search, no symbol lookup: map the images as planned, write the resolved fixups,
/// run the initializers in the recorded order, then main.
///
/// Every failure the closure causes before `main` (a binding for another request, a stale
/// or swapped image, a plan the image does not have, a bad run or target) is a
/// `ClosureError` naming the closure file, thrown after everything mapped was released, so
/// a caller can fall back to the slow path. `LoadError` is left for failures of the launch
/// itself (no address space, an initializer the image marks executable that crashes...).
public enum FastPath {
    /// How far to trust the disk between install and launch.
    public struct Checks {
        /// Hash every image's content even when stat says it is unchanged (catches a change
        /// made through an existing shared writable mapping, which keeps size, mtime, ctime
        /// and inode; costs a read of every image per launch).
        public var alwaysHashContent: Bool
        /// Use only closures signed by this key (`--trust`).
        public var trustKey: ClosureTrustKey?

        public init(alwaysHashContent: Bool = false, trustKey: ClosureTrustKey? = nil) {
            self.alwaysHashContent = alwaysHashContent
            self.trustKey = trustKey
        }
    }

    /// Launches `request` from the closure at `closurePath`: read and checked
    /// (``ClosureLaunchDecoder/read(_:trusting:helper:beside:)``), then launched as
    /// ``launch(_:closurePath:request:checks:report:clock:helper:)`` does. One
    /// ``LaunchHelper`` serves both: started when the closure is large, it decodes part of
    /// it (the bind targets and the rest of the body while this thread checks the binding
    /// and opens the first images), opens and identifies the other images as this thread
    /// maps them, checks the plans and writes part of the fixups on the second core.
    public static func launch(closurePath: String, request: LaunchOptions, checks: Checks = Checks()) throws -> Launch {
        var report = LaunchReport(mode: "dyld3")
        var clock = PhaseClock()
        let helper = LaunchHelper()
        var hashed = 0
        // A page-in launch's run check runs as soon as the closure is decoded: on the helper
        // while this thread opens and identifies the images, when the helper runs.
        let runCheck: (@Sendable (LaunchClosure) -> ClosureError?)? = request.fixups == .pageIn ? { @Sendable closure in
            firstRunFault(closure, closurePath: closurePath)
        } : nil
        let (closure, files) = try ClosureLaunchDecoder.read(closurePath, trusting: checks.trustKey, helper: helper,
                                                             check: runCheck) { table throws(ClosureError) in
            try checkBinding(table.binding, request: request, closurePath: closurePath)
            try table.checkRoots(closurePath: closurePath)
            report.timings[.closure] = clock.lap()
            return try table.openImages(0..<openedBeforeMapping(table.images.count, request: request, helper: helper),
                                        closurePath: closurePath, alwaysHash: checks.alwaysHashContent,
                                        readAhead: readAhead(request, helper: helper) == .whileOpening, hashedImages: &hashed)
        }
        report.imagesHashed = hashed
        return try launch(closure, files: files, closurePath: closurePath, request: request, checks: checks,
                          report: &report, clock: &clock, helper: helper, runsChecked: true)
    }

    /// How many of `imageCount` images this thread opens before it maps: all, unless the
    /// helper runs. Then the first quarter, about what this thread opens in the time the
    /// helper reads the rest of the body; the helper opens the others while this thread
    /// maps, handing each over as soon as it is identified.
    static func openedBeforeMapping(_ imageCount: Int, request: LaunchOptions, helper: LaunchHelper?) -> Int {
        helper?.isRunning == true ? imageCount / 4 : imageCount
    }

    /// Launches `request` from `closure` (read from `closurePath`, or built in memory and
    /// named so): bound to this request, its images opened once, identified and checked
    /// against their own load commands, mapped from those descriptors, then applied. The
    /// plans are checked on `helper`'s thread when it runs, which then writes part of the
    /// fixups; the launch gives it back before it changes a protection.
    public static func launch(_ closure: LaunchClosure, closurePath: String, request: LaunchOptions, checks: Checks = Checks(),
                              report: inout LaunchReport, clock: inout PhaseClock) throws -> Launch {
        try launch(closure, closurePath: closurePath, request: request, checks: checks, report: &report, clock: &clock, helper: nil)
    }

    /// ``launch(_:closurePath:request:checks:report:clock:)`` with a launch's `helper`.
    package static func launch(_ closure: LaunchClosure, closurePath: String, request: LaunchOptions, checks: Checks = Checks(),
                               report: inout LaunchReport, clock: inout PhaseClock, helper: LaunchHelper?) throws -> Launch {
        try checkBinding(closure.binding, request: request, closurePath: closurePath)
        try closure.checkRoots(closurePath: closurePath)
        report.timings[.closure] = clock.lap()
        var hashed = 0
        let files = try closure.openImages(closurePath: closurePath, alwaysHash: checks.alwaysHashContent,
                                           readAhead: readAhead(request, helper: helper) == .whileOpening, hashedImages: &hashed)
        report.imagesHashed = hashed
        return try launch(closure, files: files, closurePath: closurePath, request: request, checks: checks,
                          report: &report, clock: &clock, helper: helper)
    }

    /// Refuses a closure built for another request (roots, architecture, root or signature policy).
    static func checkBinding(_ binding: ClosureBinding, request: LaunchOptions, closurePath: String) throws(ClosureError) {
        let expected = ClosureBinding(request: request.roots, inserted: request.inserted, arch: request.arch, root: request.root,
                                      policy: request.signingPolicy)
        if let mismatch = binding.mismatch(with: expected) {
            throw ClosureError.mismatch(path: closurePath, field: mismatch.field, expected: mismatch.expected, found: mismatch.found)
        }
    }

    /// The launch of `closure` from `files`, the first of its images opened and identified
    /// (all of them unless the helper runs; ``openedBeforeMapping(_:request:helper:)``):
    /// mapped, the others opened and identified and the plans checked beside the mapping,
    /// fixed up, protected, then initializers and main.
    /// `runsChecked`: a page-in launch's run check was made when the closure was decoded.
    static func launch(_ closure: LaunchClosure, files: [ImageDescriptor], closurePath: String, request: LaunchOptions, checks: Checks,
                       report: inout LaunchReport, clock: inout PhaseClock, helper: LaunchHelper?, runsChecked: Bool = false) throws -> Launch {
        report.images = closure.images.map(\.path)
        // The binding named this launch's policy; the images are held to it again from what
        // the closure recorded (each record tied to its file by the cdHash identity), before
        // anything is mapped: nothing is parsed for it.
        if request.signingPolicy != .default {
            do throws(LoadError) {
                try request.signingPolicy.check(closure.images.map { ($0.path, $0.identity.signature) })
            } catch {
                helper?.finish()
                throw error
            }
        }
        var files = files, hashed = 0
        if files.count < closure.images.count, helper?.isRunning != true {
            files += try closure.openImages(files.count..<closure.images.count, closurePath: closurePath, alwaysHash: checks.alwaysHashContent,
                                            readAhead: readAhead(request, helper: helper) == .whileOpening, hashedImages: &hashed)
        }
        // A page-in launch applies its fixups on first touch, after `main` has started: every
        // run, target and page index entry it can meet is checked before anything is mapped,
        // written or run, as an eager launch checks them before its first store (when the
        // closure was decoded, or here).
        if request.fixups == .pageIn, !runsChecked, let fault = firstRunFault(closure, closurePath: closurePath) {
            helper?.finish()
            throw fault
        }
        // The helper opens and identifies the images this thread has not, handing each over
        // as this thread maps them in order; then it checks the plans (after asking for the
        // images to be read ahead). Both only read the descriptors, and nothing is written or
        // run before an image that fails its identity or a disagreement is known. A stale
        // image is reported before a mapping error, as when every image was opened first.
        let handOff = files.count < closure.images.count ? DescriptorHandOff(first: files.count, count: closure.images.count) : nil
        let readsAheadOnHelper = readAhead(request, helper: helper) == .onHelper
        let (opened, alwaysHash) = (files, checks.alwaysHashContent)
        let (mapped, checked) = LaunchHelper.run(on: helper, helper: { () -> Result<PlanCheck, ClosureError> in
            var files = opened, hashed = 0
            if let handOff {
                do throws(ClosureError) {
                    files += try closure.openImages(handOff.first..<handOff.count, closurePath: closurePath, alwaysHash: alwaysHash,
                                                    handOff: handOff, hashedImages: &hashed)
                } catch {
                    return .failure(error)
                }
            }
            if readsAheadOnHelper { readAhead(closure, files: files) }
            return .success(PlanCheck(hashedImages: hashed, disagreement: planDisagreement(closure, files: files)))
        }) {
            Result { () throws -> (LaunchMemory, PageInFixups.Plan?) in
                try map(closure, closurePath: closurePath, files: files, handOff: handOff, request: request, report: &report)
            }
        }
        let check: PlanCheck
        switch checked {
        case let .success(done): check = done
        case let .failure(stale):
            helper?.finish()
            if case let .success((memory, _)) = mapped { memory.release() }
            throw stale
        }
        report.imagesHashed = (report.imagesHashed ?? 0) + hashed + check.hashedImages
        let (memory, pageIn) = try planned(mapped, disagreement: check.disagreement, closure, closurePath: closurePath)
        if let disagreement = check.disagreement {
            helper?.finish()
            memory.release()
            throw ClosureError.plan(path: closurePath, image: closure.images[disagreement.image].path, disagreement.what)
        }
        report.slide = memory.images[0].slide
        report.timings[.mapping] = clock.lap()
        if request.verifyPages {
            do throws(LoadError) {
                report.pagesVerified = try EagerPageVerification.verify(memory, signatures: closure.images.map(\.identity.signature)).pages
            } catch {
                helper?.finish()
                memory.release()
                throw error
            }
            report.timings[.parsing] = clock.lap()
        }
        do throws(ClosureError) {
            let values = closure.bindTargetValues(memory)
            let eager = closure.images.indices.filter { !(pageIn?.indexed[$0] ?? false) }
            defer { helper?.finish() }
            try applyFixups(closure, images: eager, memory: memory, targetValues: values, closurePath: closurePath, helper: helper)
            report.timings[.bind] = clock.lap()
            if !closure.objc.bindRuns.isEmpty {
                for index in closure.objc.bindRuns.indices {
                    try closure.applyObjCWrites(ofImage: index, memory: memory, targetValues: values, closurePath: closurePath)
                }
                report.timings[.objc] = clock.lap()
            }
        } catch {
            memory.release()
            throw error
        }
        // Thread-local descriptors and the host services table, from the closure's records.
        if !closure.threadLocals.setups.isEmpty || closure.threadLocals.hostServices != nil {
            do throws(LoadError) {
                try ThreadLocals.apply(closure.threadLocals.setups, hostServices: closure.threadLocals.hostServices, memory: memory)
            } catch {
                memory.release()
                throw error
            }
        }
        // `dlopen` from the launch's code: with dlopen closures (``ClosureDynamicLoader``).
        memory.attach(ClosureDynamicLoader(launch: closure, closurePath: closurePath, request: request, memory: memory),
                      table: closure.threadLocals.hostServices.map { memory.images[$0.image].base &+ $0.vmOffset })
        report.rebases = closure.totalRebases
        report.binds = closure.totalBinds
        // A page-in launch leaves its pages untouched: a digest would fault every one in.
        // Taken after the timed launch unless code runs (it would change the memory).
        let digest = pageIn == nil ? LaunchDigest(request) : .none
        report.digest = digest == .beforeCode ? try clock.excluding { () throws(LoadError) in try digestOf(memory, closure, closurePath: closurePath) } : nil
        try memory.applyProtections()

        let mainImage = closure.rootCount - 1
        try LaunchSequence.runInitializersThenMain(
            order: closure.initializerOrder, initializers: closure.images.map(\.initializers), mainImage: mainImage,
            entryOffset: closure.entryOffset, paths: report.images, arch: closure.arch, run: request.run, memory: memory,
            objcLoads: closure.objc.loads, report: &report, clock: &clock)
        report.timings[.total] = clock.total()
        if closure.objc.bindRuns.isEmpty {
            report.objcSkippedReason = "the closure records no Objective-C step (its builder found no metadata or no runtime of ours; "
                + "`dyld3 launch --mode dyld2 --stats` says which)"
        }
        if digest == .afterLaunch { report.digest = try digestOf(memory, closure, closurePath: closurePath) }
        report.pagesFilled = memory.pager?.pagesFilled ?? 0
        return Launch(memory: memory, report: report, fixups: nil)
    }

    /// The digest of `memory` after the closure's fixups and Objective-C writes, rewriting
    /// the locations they fixed up with pointers (the closure decoded again, outside the
    /// timed launch).
    static func digestOf(_ memory: LaunchMemory, _ closure: LaunchClosure, closurePath: String) throws(LoadError) -> UInt64 {
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
        return memory.writableDigest(slideDependent: LaunchDigest.slideDependentLocations(fixups, then: later))
    }

    /// The mapping's result. A mapping the closure's plan made fail (an offset the kernel
    /// will not map, a reservation too large, segments that collide) is a `ClosureError`
    /// naming the closure file, so that `auto` falls back; a plan the image's own load
    /// commands disagree with is the cause, and is reported first.
    static func planned<Mapped>(_ mapped: Result<Mapped, any Error>, disagreement: (image: Int, what: PlanDisagreement)?,
                                _ closure: LaunchClosure, closurePath: String) throws -> Mapped {
        guard case let .failure(error) = mapped else { return try mapped.get() }
        guard case let .mapping(image, reason) = error as? LoadError else { throw error }
        if let disagreement { throw ClosureError.plan(path: closurePath, image: closure.images[disagreement.image].path, disagreement.what) }
        throw ClosureError.mapping(path: closurePath, image: image, what: reason)
    }

    /// What the helper found beside the mapping: how many images it hashed while identifying
    /// them, and the first plan an image's load commands disagree with.
    struct PlanCheck: Sendable {
        var hashedImages: Int
        var disagreement: (image: Int, what: PlanDisagreement)?
    }

    /// Writes the fixups of `images`. With `helper` running, they are split in two parts of
    /// about the same size of fixup runs (a proxy for the fixups and the pages they dirty):
    /// the helper writes the second while this thread writes the first, so the copy-on-write
    /// faults are taken on two CPUs. Each image is written by one thread, through a writer
    /// taken beforehand; an error in the first part is reported before one in the second,
    /// as with one thread.
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
        let secondPartFailure = try LaunchHelper.run(on: helper, helper: { () -> ClosureError? in
            do throws(ClosureError) {
                for position in secondPart {
                    try closure.applyFixups(ofImage: images[position], writer: writers[position], targetValues: targetValues, closurePath: closurePath)
                }
                return nil
            } catch {
                return error
            }
        }) { () throws(ClosureError) in
            for position in 0..<secondPart.lowerBound {
                try closure.applyFixups(ofImage: images[position], writer: writers[position], targetValues: targetValues, closurePath: closurePath)
            }
        }.helper
        if let secondPartFailure { throw secondPartFailure }
    }

    /// Maps the closure's images: eagerly, or for `--fixups page-in` with the pages that
    /// receive fixups reserved, registered with a userfaultfd and made live (a touch fills
    /// the page on the touching thread) before anything can touch them. Where userfaultfd is
    /// unavailable (or registering or going live fails), the memory is released and mapped
    /// again for an eager launch (a hand-off keeps what it handed over), the reason kept in
    /// the report.
    static func map(_ closure: LaunchClosure, closurePath: String, files: [ImageDescriptor], handOff: DescriptorHandOff? = nil,
                    request: LaunchOptions, report: inout LaunchReport) throws -> (LaunchMemory, PageInFixups.Plan?) {
        let plans = closure.images.map(\.plan)
        guard request.fixups == .pageIn else {
            return (try LaunchMemory(plans: plans, descriptors: files, handOff: handOff, firstSlide: request.slide), nil)
        }
        let pageSize = LaunchMemory.pageSize
        let plan = try PageInFixups.plan(closure, pageSize: pageSize)
        let reason: String
        switch FixupPager.open() {
        case let .failure(failure):
            reason = "userfaultfd is not available: \(failure)"
        case let .success(pager):
            pager.expectSignatures(closure.images.map(\.identity.signature))
            var memory: LaunchMemory?
            do {
                let mapped = try LaunchMemory(plans: plans, descriptors: files, handOff: handOff, firstSlide: request.slide,
                                              pageIn: (pager, plan.ranges))
                memory = mapped
                try pager.start(source: PageInFixups(closure, plan: plan, targetValues: closure.bindTargetValues(mapped), pageSize: pageSize),
                                faultAround: request.faultAround)
                report.fixupsMode = .pageIn
                report.fixupPages = plan.pageCount
                report.registeredBytes = pager.registeredBytes
                return (mapped, plan)
            } catch {
                if let memory { memory.release() } else { pager.close() }
                reason = "page-in setup failed: \(error)"
            }
        }
        report.fixupsFallbackReason = reason
        return (try LaunchMemory(plans: plans, descriptors: files, handOff: handOff, firstSlide: request.slide), nil)
    }

    /// When the images are asked to be read ahead (``ImagePlan/readAheadRange(deferred:)``):
    /// never under page-in linking; on the helper before its plan check, where the ≈ 1 µs a
    /// call costs on a warm launch is off the launch thread; else as each image is opened.
    enum ReadAhead { case never, whileOpening, onHelper }

    /// Where `request`'s launch reads ahead, given its `helper`.
    static func readAhead(_ request: LaunchOptions, helper: LaunchHelper?) -> ReadAhead {
        request.fixups == .pageIn ? .never : helper?.isRunning == true ? .onHelper : .whileOpening
    }

    /// Asks the kernel to read ahead each image of `closure` from its descriptor in `files`.
    static func readAhead(_ closure: LaunchClosure, files: [ImageDescriptor]) {
        for (image, file) in zip(closure.images, files) {
            if let range = image.plan.readAheadRange() { file.readAhead(range) }
        }
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

    /// The first image whose plan is not the one its own header and load commands give, and
    /// how: protections, file ranges, writable and executable segments are the image's, not
    /// the closure's. Read through `files`, the descriptors the launch maps from.
    static func planDisagreement(_ closure: LaunchClosure, files: [ImageDescriptor]) -> (image: Int, what: PlanDisagreement)? {
        for index in closure.images.indices {
            if let disagreement = closure.images[index].planDisagreement(arch: closure.arch, file: files[index]) {
                return (index, disagreement)
            }
        }
        return nil
    }
}

