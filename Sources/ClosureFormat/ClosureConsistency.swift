import LaunchPlan
import MachOReader

extension LaunchClosure {
    /// How many bad fixups of one image are listed before the rest are only counted.
    static let fixupProblemLimit = 8

    /// What is wrong inside a closure the reader accepted: how its fields fit together. Every
    /// fixup 8 bytes inside a writable segment of its image, every rebase into its image, every
    /// image index in range, no segments overlapping, every missing dependency a listed weak one,
    /// the Objective-C part fitting (``objcProblems()``). Empty for any closure the builder wrote.
    package func consistencyProblems() -> [String] {
        var problems: [String] = []
        if rootCount < 1 || rootCount > images.count {
            problems.append("root count \(rootCount) with \(images.count) images")
        }
        if rootCount != binding.expectedRootCount {
            problems.append("root count \(rootCount) disagrees with the binding's host (\(binding.host.isEmpty ? "none" : binding.host))")
        }
        problems += initializerOrderProblems()
        for (index, target) in bindTargets.enumerated() {
            if case let .image(image, offset) = target, !images.indices.contains(image) || offset >= images[image].plan.vmSize {
                problems.append("bind target #\(index) (image \(image), offset \(hex(offset))) is outside every image")
            }
        }
        for index in images.indices {
            problems += segmentProblems(images[index])
            problems += dependencyProblems(images[index])
            problems += fixupProblems(index)
            problems += pageIndexProblems(images[index])
            for offset in images[index].initializers where !images[index].plan.isExecutable(offset) {
                problems.append("\(images[index].path): initializer at \(hex(offset)) is not in an executable segment")
            }
        }
        if let entry = entryOffset, rootCount >= 1, rootCount <= images.count,
           !images[rootCount - 1].plan.isExecutable(entry) {
            problems.append("entry point \(hex(entry)) is not in an executable segment of \(images[rootCount - 1].path)")
        }
        problems += objcProblems()
        return problems
    }

    private func initializerOrderProblems() -> [String] {
        var problems: [String] = []
        var seen = Set<Int>()
        for index in initializerOrder {
            if !images.indices.contains(index) {
                problems.append("initializer order names image \(index) of \(images.count)")
            } else if !seen.insert(index).inserted {
                problems.append("initializer order names \(images[index].path) twice")
            }
        }
        for index in images.indices where !images[index].initializers.isEmpty && !seen.contains(index) {
            problems.append("\(images[index].path) has initializers but is not in the initializer order")
        }
        return problems
    }

    private func segmentProblems(_ image: ClosureImage) -> [String] {
        var problems: [String] = []
        let segments = image.plan.segments
        for (position, segment) in segments.enumerated() {
            let (end, overflow) = segment.vmOffset.addingReportingOverflow(segment.vmSize)
            if overflow || end > image.plan.vmSize {
                problems.append("\(image.path): segment \(segment.name) ends past the image's \(hex(image.plan.vmSize)) bytes")
            }
            if segment.fileSize > segment.vmSize {
                problems.append("\(image.path): segment \(segment.name) maps more file bytes than its size")
            }
            for other in segments[(position + 1)...] where segment.overlaps(other) {
                problems.append("\(image.path): segments \(segment.name) and \(other.name) overlap")
            }
        }
        return problems
    }

    private func dependencyProblems(_ image: ClosureImage) -> [String] {
        var problems: [String] = []
        for dependency in image.dependencies {
            if dependency.target == -1 {
                if dependency.kind != .weak {
                    problems.append("\(image.path): \(dependency.kind.rawValue) dependency \(dependency.installName) is missing")
                } else if !missingWeakDylibs.contains(where: { $0.installName == dependency.installName }) {
                    problems.append("\(image.path): missing weak dependency \(dependency.installName) is not listed as missing")
                }
            } else if !images.indices.contains(dependency.target) {
                problems.append("\(image.path): dependency \(dependency.installName) names image \(dependency.target) of \(images.count)")
            }
        }
        return problems
    }

    /// The page index must be the one the runs call for: a page missing from it would never get
    /// its fixups in a page-in launch.
    private func pageIndexProblems(_ image: ClosureImage) -> [String] {
        do {
            let derived = try FixupPageIndex.derive(rebaseRuns: image.rebaseRuns, bindRuns: image.bindRuns)
            guard derived != image.fixupPageIndex else { return [] }
            let stored = try image.fixupPageIndex.pages(path: image.path), expected = try derived.pages(path: image.path)
            if stored.pageSize != expected.pageSize {
                return ["\(image.path): fixup page index has page size \(stored.pageSize), its runs call for \(expected.pageSize)"]
            }
            let first = zip(stored.pages, expected.pages).first { $0 != $1 }
            let page = first.map { hex($0.1.page * expected.pageSize) } ?? "\(min(stored.pages.count, expected.pages.count))th page"
            return ["\(image.path): fixup page index disagrees with its runs at \(page) "
                + "(\(stored.pages.count) pages indexed, the runs call for \(expected.pages.count))"]
        } catch {
            return ["\(image.path): fixup page index does not decode: \(error)"]
        }
    }

    /// Image `index`'s runs walked as a stream, nothing collected. A fixup outside every writable
    /// segment, or a rebase outside the image, is listed (the first ``fixupProblemLimit``, then
    /// counted); a run claiming more locations than its segment has room for stops its stream
    /// before its first entry, as it stops a launch.
    private func fixupProblems(_ index: Int) -> [String] {
        let image = images[index]
        let writable = WritableRanges(image.plan)
        let vmSize = image.plan.vmSize
        let tableSize = bindTargets.count
        var bad = LimitedProblems()
        func note(_ problem: String) { bad.note("\(image.path): \(problem)") }
        var outside = OutsideWriteCheck(writable)
        func checkLocation(_ location: UInt64) {
            if outside.isBad(location) { note("fixup at \(hex(location)) is not 8 bytes inside a writable segment") }
        }
        var rebases = 0, binds = 0
        do throws(ClosureError) {
            try ClosureError.walking(.rebases) { () throws(FixupFault) in
                try FixupRunWalk(image.rebaseRuns).forEachRebase { (run, _) throws(FixupFault) in try outside.enter(run) } _: { (location, target) throws(FixupFault) in
                    rebases += 1
                    checkLocation(location)
                    if target.offset >= vmSize { note("rebase at \(hex(location)) points to \(hex(target.offset)), outside the image") }
                }
            }
            try ClosureError.walking(.binds) { () throws(FixupFault) in
                try FixupRunWalk(image.bindRuns).forEachBind(tableSize: tableSize) { (run, _) throws(FixupFault) in try outside.enter(run) } _: { (location, _, _) throws(FixupFault) in
                    binds += 1
                    checkLocation(location)
                }
            }
        } catch {
            if case .runLongerThanSegment = error.fixupFault { return bad.listed + ["\(image.path): \(error)"] }
            return ["\(image.path): fixup runs do not decode: \(error)"]
        }
        var problems: [String] = []
        if rebases != image.rebaseCount || binds != image.bindCount {
            problems.append("\(image.path): runs hold \(rebases) rebases and \(binds) binds, "
                + "the counts say \(image.rebaseCount) and \(image.bindCount)")
        }
        return problems + bad.all { "\(image.path): \($0) more bad fixups" }
    }
}

/// Problems of one kind: the first ``LaunchClosure/fixupProblemLimit`` listed, the rest counted.
struct LimitedProblems {
    private(set) var listed: [String] = []
    private var count = 0

    mutating func note(_ problem: String) {
        count += 1
        if listed.count < LaunchClosure.fixupProblemLimit { listed.append(problem) }
    }

    /// The listed problems, then `more(n)` for the `n` not listed.
    func all(more: (Int) -> String) -> [String] { count > listed.count ? listed + [more(count - listed.count)] : listed }
}

/// The check the closure's verifiers make of the locations a stream of runs writes: a run that
/// lies in no writable segment (``FixupFault/runOutsideSegments``) has each location checked
/// on its own; any other fault of the run stops the walk.
struct OutsideWriteCheck {
    let writable: WritableRanges
    /// Whether the run being walked lies outside every writable segment.
    private var outside = false

    init(_ writable: WritableRanges) { self.writable = writable }

    mutating func enter(_ run: FixupRun) throws(FixupFault) {
        outside = false
        guard !writable.accepts(run) else { return }
        let fault = writable.fault(run)
        guard case .runOutsideSegments = fault else { throw fault }
        outside = true
    }

    /// Whether `location`, in the run entered last, is not 8 bytes inside a writable segment.
    func isBad(_ location: UInt64) -> Bool { outside && !writable.accepts(location) }
}
