import Dyld2
import Dyld3
import LoaderCore
import LaunchPlan
import ClosureFormat
import LaunchMemory
import RuntimeServices
import SharedCache
import MachOReader

/// `dyld3 compare`: the same app launched through the dyld2 slow path and the dyld3 fast
/// path at the same slide must leave byte-identical writable memory, the same fixups, the
/// same initializer order and the same result. Code runs only when a launch of the graph
/// may run it (``LaunchTail/reasonNotToRun(run:arch:memory:paths:)``): a graph with an
/// image from a stub root is compared without running anything.
package struct LaunchComparison: Sendable {
    /// One difference, located.
    package struct Difference: Sendable, CustomStringConvertible {
        package let what: String, image: String, segment: String
        package let offset: UInt64
        package let detail: String
        package var description: String {
            "\(what): \(image) \(segment)+\(hex(offset)): \(detail)"
        }

        /// A difference of the whole launch, at no one place.
        static func launch(_ what: String, _ detail: String) -> Difference {
            Difference(what: what, image: "", segment: "", offset: 0, detail: detail)
        }
    }

    package let slide: UInt64
    package let images: Int, bytesCompared: Int
    /// Fixup locations compared, in every image compared (the launch's and those the `dlopen`s
    /// added): the last write to each location, as memory holds it.
    package let fixupsCompared: Int
    /// Fixups dyld2 wrote in every image compared (a location written twice, by a rebase and
    /// then a weak bind say, counts twice): for the launch's images, the count `install` and
    /// `launch --stats` report.
    package let fixupsWritten: Int
    package let initializers: [String]
    package let dyld2Result: Int32?, dyld3Result: Int32?
    /// Why main's result was not compared (no code ran, or no main), when it was not.
    package let notRun: NotRunReason?
    package let differences: [Difference]
    /// What each `dlopen` did in the dyld3 launch (``run(options:closure:closurePath:configuration:prelinkedSet:dlopen:)``).
    package let dlopens: [DynamicLoadEvent]
    /// How the dyld3 launch wrote its fixups, and why not page by page when page-in was asked for.
    package let fixupsMode: FixupsMode
    package let pageInFallback: PageInFallback?
    /// Page-in: pages registered with the handler, and pages it filled while the snapshot
    /// touched every writable byte (all of them, when nothing went wrong).
    package let pagesRegistered: Int, pagesFilled: Int
    /// A prelinked set: whether the dyld3 side mapped its copy slid for this boot, and when
    /// not, why it slid the set at launch.
    package var slidForBoot = false
    package var slideAtLaunch: SlideAtLaunchReason?

    /// Launches both ways at the same slide and compares; when `options.run` is set and the
    /// code can run here, both are also run to compare main's result. `closurePath` names
    /// where `closure` came from (in refusals). Throws `LoadError` when a launch fails,
    /// `ClosureError` when the fast path refuses the closure.
    /// With `prelinkedSet`, the dyld3 side is the launch of that prelinked set
    /// (``PrelinkedLaunch``), laid out as the slow path lays out the images, and `closure`
    /// (the closure it was built from) gives the fixups compared.
    /// `dlopen`: paths opened after each launch (before anything runs), in order, as the
    /// app's code would open them; the images they add are compared too, at one slide: their
    /// memory, and dyld2's fixups against those of the dlopen closure the dyld3 side applied.
    package static func run(options: LaunchOptions, closure: LaunchClosure, closurePath: String,
                           configuration: LaunchConfiguration = LaunchConfiguration(), prelinkedSet: String? = nil,
                           dlopen: [String] = []) throws -> LaunchComparison {
        func fastLaunch(_ request: LaunchOptions) throws -> Launch {
            guard let prelinkedSet else { return try FastPath.launch(closure, closurePath: closurePath, request: request, configuration: configuration) }
            return try PrelinkedLaunch.launch(setPath: prelinkedSet, request: request, configuration: configuration)
        }
        let runCode = options.run
        var options = options
        (options.run, options.recordFixups) = (false, true)
        // A prelinked set maps its copy slid for this boot where that copy lies: dyld2 goes there.
        if let prelinkedSet, options.slide == nil, let slide = try PrelinkedLaunch.slideForBoot(setPath: prelinkedSet, request: options, configuration: configuration) {
            options.slide = slide
        }
        // Both launches must land at the same addresses: take the first one's slide.
        let slow = try SlowPath.launch(options)
        let slide = slow.report.slide
        let (slowOpened, slides) = try open(dlopen, in: slow.memory, slides: nil)
        var slowSnapshot = snapshot(slow.memory)
        let slowRelative = relative(slow.memory)
        let slowKeys = slow.memory.threadLocalKeyOfImage
        let slowFixups = slow.fixups ?? []
        // dyld2 from the shared cache: its images there, and the cache's pointers in them.
        let slowInCache = slow.memory.images.map(\.inSharedCache)
        var slowCachePointers: [[UInt64]] = []
        if let request = options.sharedCache, let range = slow.memory.sharedRange {
            let slots = slow.memory.images.map { $0.inSharedCache ? (offset: $0.base - range.base, size: $0.plan.vmSize) : nil }
            do throws(ClosureError) {
                slowCachePointers = try SharedCacheDylibs.open(request, arch: options.arch).pointers(slots: slots).map { $0.map(\.vmOffset) }
            } catch {
                throw LoadError.failed(path: request.path, cause: error)
            }
        }
        var slowReport = slow.report
        slowReport.images += slowOpened.flatMap(\.loaded)
        let names = SymbolNames(paths: slowReport.images, arch: options.arch)
        var notRun = LaunchTail.reasonNotToRun(run: runCode, arch: options.arch, memory: slow.memory, paths: slowReport.images)
        slow.memory.release()
        let launchImages = slow.report.images.count
        let slowDlopenFixups = slowOpened.contains { !$0.loaded.isEmpty } ? try dyld2DlopenFixups(dlopen, options: options) : []

        options.slide = slide
        let fast = try fastLaunch(options)
        let report = fast.report
        let (fastOpened, _) = try open(dlopen, in: fast.memory, slides: slides)
        let fastDlopenClosures = try appliedDlopenClosures(fastOpened, launch: closure, request: options, configuration: configuration,
                                                           closurePath: closurePath)
        var fastSnapshot = snapshot(fast.memory)
        // Images in the shared cache lie elsewhere than dyld2 maps them: every pointer dyld2
        // wrote is compared as its image and offset, on both sides.
        if fast.memory.sharedRange != nil || !slowCachePointers.isEmpty {
            var locations = LaunchDigest.slideDependentLocations(slowFixups + slowDlopenFixups)
            for (index, cached) in slowCachePointers.enumerated() where !cached.isEmpty && index < locations.count {
                locations[index] = Array(Set(cached + locations[index])).sorted()
            }
            rewrite(&slowSnapshot, at: locations, slowRelative)
            rewrite(&fastSnapshot, at: locations, relative(fast.memory))
        }
        let fastKeys = fast.memory.threadLocalKeyOfImage
        let pagesRegistered = Int((fast.memory.pager?.registeredBytes ?? 0) / LaunchMemory.pageSize)
        let pagesFilled = fast.memory.pager?.pagesFilled ?? 0
        let pageInFailure = fast.memory.pager?.failure
        fast.memory.release()

        var differences: [Difference] = []
        if let pageInFailure { differences.append(.launch("page-in", "the handler failed: \(pageInFailure)")) }
        var bytes = 0
        for (a, b) in zip(slowSnapshot, fastSnapshot) {
            bytes += a.bytes.count
            guard a.bytes != b.bytes else { continue }
            var offset = 0
            var reported = 0
            while offset < min(a.bytes.count, b.bytes.count), reported < 20 {
                if a.bytes[offset] != b.bytes[offset] {
                    let word = UInt64(offset / 8 * 8)
                    // A thread-local descriptor's key: each launch's own key for the image.
                    if let slowKey = slowKeys[a.image], let fastKey = fastKeys[b.image], Int(word) + 8 <= min(a.bytes.count, b.bytes.count),
                       a.bytes.littleEndianWord(Int(word)) == UInt64(slowKey), b.bytes.littleEndianWord(Int(word)) == UInt64(fastKey) {
                        offset = Int(word) + 8
                        continue
                    }
                    let location = a.vmOffset + word
                    let fixup = a.image < slowFixups.count ? slowFixups[a.image].last { $0.vmOffset == location } : nil
                    differences.append(Difference(
                        what: "memory", image: slowReport.images[a.image], segment: a.segment, offset: word,
                        detail: "dyld2 and dyld3 wrote different bytes" + (fixup.map { " (fixup: \(names.describe($0, image: a.image)))" } ?? "")))
                    reported += 1
                    offset = Int(word) + 8
                } else {
                    offset += 1
                }
            }
        }
        if slowSnapshot.count != fastSnapshot.count { differences.append(.launch("segments", "\(slowSnapshot.count) writable segments vs \(fastSnapshot.count)")) }
        var fixupCount = 0
        let fixupsWritten = (slowFixups + slowDlopenFixups).reduce(0) { $0 + $1.count }
        /// dyld2's fixups of image `index` against those `source` (the launch closure, or a
        /// dlopen closure) writes there.
        func compareFixups(_ fixups: [ResolvedFixup], image index: Int, closure source: LaunchClosure) throws(LoadError) {
            let expected = effective(fixups)
            let closureFixups: [ResolvedFixup]
            do throws(ClosureError) { closureFixups = try source.fixups(ofImage: index) } catch { throw LoadError.failed(path: source.images[index].path, cause: error) }
            let actual = effective(closureFixups)
            fixupCount += expected.count
            let plan = source.images[index].plan
            for (location, fixup) in expected.sorted(by: { $0.key < $1.key }) where actual[location] != fixup {
                differences.append(Difference(
                    what: "fixup", image: slowReport.images[index], segment: segmentName(plan, location), offset: location,
                    detail: "dyld2 \(names.describe(fixup, image: index)), closure \(actual[location].map { names.describe($0, image: index) } ?? "nothing")"))
            }
            for location in actual.keys where expected[location] == nil {
                differences.append(Difference(what: "fixup", image: slowReport.images[index], segment: segmentName(plan, location),
                                              offset: location, detail: "only the closure writes here"))
            }
        }
        // An image in the shared cache has no fixups in the closure: the cache holds them
        // (checked word for word when the closure was bound), compared above as memory. When
        // dyld2 took it from the cache too, its patches are compared with the closure's.
        for index in slowFixups.indices where closure.images[index].cacheSlot == nil || (index < slowInCache.count && slowInCache[index]) {
            try compareFixups(slowFixups[index], image: index, closure: closure)
        }
        if slowOpened.map(\.loaded) != fastOpened.map(\.loaded) {
            differences.append(.launch("dlopen", "dyld2 loaded \(slowOpened.map(\.loaded)), dyld3 \(fastOpened.map(\.loaded))"))
        } else {
            // The images each dlopen added, numbered after the launch's on both sides; one it
            // took from the shared cache is the cache's, compared as memory (its patches too).
            for (nested, added) in fastDlopenClosures {
                for index in added where nested.images[index].cacheSlot == nil {
                    try compareFixups(slowDlopenFixups[index - launchImages], image: index, closure: nested)
                }
            }
        }
        if slowReport.initializers != report.initializers {
            differences.append(.launch("initializers", "dyld2 \(slowReport.initializers), dyld3 \(report.initializers)"))
        }

        // main's result, when the code can run here.
        var results: (Int32?, Int32?) = (nil, nil)
        if notRun == nil {
            (options.run, options.recordFixups, options.slide) = (true, false, slide)
            let slowRun = try SlowPath.launch(options)
            results.0 = slowRun.report.result
            notRun = slowRun.report.notRun
            slowRun.memory.release()
            let fastRun = try fastLaunch(options)
            results.1 = fastRun.report.result
            fastRun.memory.release()
            if results.0 != results.1 {
                differences.append(.launch("result", "dyld2 main returned \(results.0.map(String.init) ?? "nothing"), dyld3 \(results.1.map(String.init) ?? "nothing")"))
            }
        }
        return LaunchComparison(slide: slide, images: slowReport.images.count, bytesCompared: bytes, fixupsCompared: fixupCount, fixupsWritten: fixupsWritten,
                                initializers: slowReport.initializers, dyld2Result: results.0, dyld3Result: results.1,
                                notRun: notRun, differences: differences, dlopens: fastOpened, fixupsMode: report.fixupsMode,
                                pageInFallback: report.pageInFallback, pagesRegistered: pagesRegistered, pagesFilled: pagesFilled,
                                slidForBoot: report.slidForBoot, slideAtLaunch: report.slideAtLaunch)
    }

    /// Opens each of `paths` in the launch of `memory` as its code would (nothing runs: the
    /// launch was made with `run` off), the n-th at `slides[n]` when given; returns what each
    /// did and the slide of each reservation (nil for an image loaded already).
    static func open(_ paths: [String], in memory: LaunchMemory, slides: [UInt64?]?) throws -> ([DynamicLoadEvent], [UInt64?]) {
        guard !paths.isEmpty else { return ([], []) }
        guard let loader = memory.dynamicLoader?.loader else {
            throw LoadError.unusable(path: paths[0], reason: "cannot be opened: the launch has no dynamic loader")
        }
        var used: [UInt64?] = []
        for (position, path) in paths.enumerated() {
            loader.nextSlide = slides?[position]
            let before = loader.loadedMemories.count
            _ = try loader.open(path, mode: 2)
            used.append(loader.loadedMemories.count > before ? loader.loadedMemories.last?.images.first?.slide : nil)
        }
        return (loader.events, used)
    }

    /// dyld2's fixups of each image the `dlopen`s of `paths` add after the launch of `options`,
    /// in load order: the slow path's dlopen records none, so they are resolved again by its
    /// resolver, over its dependency graph as each open extends it (the opens' results, like
    /// the launch's, depend on nothing but the files).
    static func dyld2DlopenFixups(_ paths: [String], options: LaunchOptions) throws(LoadError) -> [[ResolvedFixup]] {
        var graph = try DependencyGraph(roots: options.roots, inserted: options.inserted, arch: options.arch, root: options.root)
        func plan(_ node: DependencyGraph.Node) throws(LoadError) -> ImagePlan { try ImagePlan(image: node.image, path: node.path, sliceOffset: node.file.sliceOffset) }
        var plans = try graph.nodes.map(plan)
        var fixups: [[ResolvedFixup]] = []
        for path in paths {
            let added = try graph.open(path, arch: options.arch).added
            guard !added.isEmpty else { continue }
            plans += try added.map { index throws(LoadError) in try plan(graph.nodes[index]) }
            var resolver = try FixupResolver(graph: graph, plans: plans)
            for index in added {
                var imageFixups: [ResolvedFixup] = []
                try resolver.resolve(image: index) { (fixup) throws(LoadError) in imageFixups.append(fixup) }
                fixups.append(imageFixups)
            }
        }
        return fixups
    }

    /// For each of `events` that added images, the dlopen closure the dyld3 launch applied and
    /// the images it added: the launch closure's own for the path (`via` "closure"), or the one
    /// `configuration` builds for it ("runtime closure"), each decoded within the images
    /// loaded before it, as ``ClosureDynamicLoader`` decodes it.
    static func appliedDlopenClosures(_ events: [DynamicLoadEvent], launch: LaunchClosure, request: LaunchOptions,
                                      configuration: LaunchConfiguration, closurePath: String) throws(LoadError) -> [(closure: LaunchClosure, added: Range<Int>)] {
        var within = launch
        var earlier: [String] = []
        var applied: [(closure: LaunchClosure, added: Range<Int>)] = []
        for event in events where !event.loaded.isEmpty {
            let first = within.images.count
            let nested: LaunchClosure?
            if event.via == "closure" {
                nested = launch.dlopens.lazy.compactMap { try? $0.closure(within: within, path: closurePath) }
                    .first { $0.images[first...].map(\.path) == event.loaded }
            } else if let build = configuration.dlopenClosures,
                      let record = try? build(event.requested, request, launch, within.images, { _ in nil }, earlier, nil).encoded() {
                nested = try? record.closure(within: within, path: closurePath)
            } else {
                nested = nil
            }
            guard let nested, nested.images[first...].map(\.path) == event.loaded else {
                throw .unusable(path: event.requested, reason: "its dlopen closure, \(event.via), cannot be had again to compare its fixups")
            }
            applied.append((nested, first..<nested.images.count))
            within.images = nested.images
            earlier.append(event.requested)
        }
        return applied
    }

    /// Every writable segment of the launch, then of each reservation a `dlopen` added
    /// (their images numbered after the launch's).
    static func snapshot(_ memory: LaunchMemory) -> [LaunchMemory.SegmentSnapshot] {
        var segments = memory.writableSnapshot()
        var first = memory.images.count
        for opened in memory.dynamicLoader?.loader.loadedMemories ?? [] {
            segments += opened.writableSnapshot().map { LaunchMemory.SegmentSnapshot(image: first + $0.image, segment: $0.segment, vmOffset: $0.vmOffset, bytes: $0.bytes) }
            first += opened.images.count
        }
        return segments
    }

    /// ``LaunchMemory/imageRelative`` over the launch's images, then those its `dlopen`s added,
    /// numbered as ``snapshot(_:)`` numbers them.
    static func relative(_ memory: LaunchMemory) -> (UInt64) -> UInt64 {
        LaunchMemory.imageRelative(memory.images + (memory.dynamicLoader?.loader.loadedMemories ?? []).flatMap(\.images), regionBase: memory.regionBase)
    }

    /// Rewrites the words at `locations` (per image, offsets from its base) of `segments` with
    /// `relative` (``LaunchMemory/imageRelative``).
    static func rewrite(_ segments: inout [LaunchMemory.SegmentSnapshot], at locations: [[UInt64]], _ relative: (UInt64) -> UInt64) {
        for (position, segment) in segments.enumerated() where segment.image < locations.count {
            var bytes = segment.bytes
            let end = segment.vmOffset + UInt64(bytes.count)
            for location in locations[segment.image] where location >= segment.vmOffset && location < end && end - location >= 8 {
                let at = Int(location - segment.vmOffset)
                bytes.replaceSubrange(at..<at + 8, with: Words.le([relative(bytes.littleEndianWord(at))]))
            }
            segments[position] = LaunchMemory.SegmentSnapshot(image: segment.image, segment: segment.segment, vmOffset: segment.vmOffset, bytes: bytes)
        }
    }

    /// Location → the fixup that stays there (the last one written).
    static func effective(_ fixups: [ResolvedFixup]) -> [UInt64: ResolvedFixup] {
        Dictionary(fixups.map { ($0.vmOffset, $0) }) { _, last in last }
    }

    static func segmentName(_ plan: ImagePlan, _ offset: UInt64) -> String {
        plan.segments.first { offset >= $0.vmOffset && offset - $0.vmOffset < $0.vmSize }?.name ?? "?"
    }
}

/// Names bind targets by the symbol exported at their offset (only used to explain a difference).
struct SymbolNames {
    let paths: [String]
    let arch: String

    func describe(_ fixup: ResolvedFixup, image: Int) -> String {
        switch fixup.kind {
        case let .rebase(target, high8):
            return "rebase to +\(hex(target))" + (high8 != 0 ? " high8 \(hex(high8))" : "")
        case let .bind(.image(index, offset), addend):
            return "bind to \(symbol(in: index, offset: offset) ?? "+\(hex(offset))") in \(paths[index])"
                + (addend != 0 ? " addend \(addend)" : "")
        case let .bind(.absolute(value), addend):
            return "bind to absolute \(hex(value)) addend \(addend)"
        case let .bind(.missingWeakImport, addend):
            return "missing weak import (0) addend \(addend)"
        }
    }

    func symbol(in index: Int, offset: UInt64) -> String? {
        guard let file = try? ImageFile.load(path: paths[index], arch: arch),
              let symbols = try? file.image.exportTrie()?.allSymbols() else { return nil }
        return symbols.first { $0.imageOffset == offset }?.name
    }
}
