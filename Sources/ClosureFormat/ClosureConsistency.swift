import LaunchPlan

extension LaunchClosure {
    /// How many bad fixups of one image are listed before the rest are only counted.
    static let fixupProblemLimit = 8

    /// What is wrong inside a closure that `ClosureFile.read` accepted: the reader checks
    /// each field as it decodes; this checks how the fields fit together. Every fixup lies
    /// 8 bytes inside a writable segment of its image, every rebase points into its image,
    /// every image index is in range, no two segments of an image overlap, every missing
    /// dependency is a weak one that is listed, the Objective-C part fits (``objcProblems()``). Empty for any closure the builder wrote.
    public func consistencyProblems() -> [String] {
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

    /// The page index must be exactly the one the runs call for (``FixupPageIndex/derive``):
    /// a page missing from it would never get its fixups in a page-in launch.
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

    private func fixupProblems(_ index: Int) -> [String] {
        let image = images[index]
        let fixups: [ResolvedFixup]
        do {
            fixups = try self.fixups(ofImage: index)
        } catch {
            return ["\(image.path): fixup runs do not decode: \(error)"]
        }
        var problems: [String] = []
        let rebases = fixups.count(where: { if case .rebase = $0.kind { true } else { false } })
        if rebases != image.rebaseCount || fixups.count - rebases != image.bindCount {
            problems.append("\(image.path): runs hold \(rebases) rebases and \(fixups.count - rebases) binds, "
                + "the counts say \(image.rebaseCount) and \(image.bindCount)")
        }
        let writable = WritableRanges(image.plan)
        var bad: [String] = []
        var badCount = 0
        for fixup in fixups {
            var problem: String?
            if !writable.accepts(fixup.vmOffset) {
                problem = "fixup at \(hex(fixup.vmOffset)) is not 8 bytes inside a writable segment"
            } else if case let .rebase(target, _) = fixup.kind, target >= image.plan.vmSize {
                problem = "rebase at \(hex(fixup.vmOffset)) points to \(hex(target)), outside the image"
            }
            guard let problem else { continue }
            badCount += 1
            if bad.count < LaunchClosure.fixupProblemLimit { bad.append("\(image.path): \(problem)") }
        }
        if badCount > bad.count { bad.append("\(image.path): \(badCount - bad.count) more bad fixups") }
        return problems + bad
    }
}

/// `0x` and lowercase hex digits.
package func hex(_ value: UInt64) -> String { "0x" + String(value, radix: 16) }
