import LaunchPlan

/// The encoding of an image's resolved fixups as runs: locations that follow each other at
/// one stride, each with its own target (layout: ``FixupRunWalk``). The encoder records each
/// page's restart point as it writes, so the page index comes with the bytes.
package enum FixupRuns {
    /// One encoded run stream, its fixup count and page restart points (nil: no page index).
    package struct Encoded {
        package var bytes: [UInt8]
        package var count: Int
        package var pages: [FixupPageIndex.PageRestart]?

        /// No fixups: no runs, no page index.
        package static let none = Encoded(bytes: [], count: 0, pages: nil)
    }

    /// Encodes locations sorted by vmOffset (stable). A run never crosses a segment boundary
    /// (the fast path checks each run against one segment) nor a page boundary (each page's
    /// fixups are whole runs the page index points at). `writeRun` writes the entries `range`
    /// of the run, told its restart point to complete and record.
    static func encode<Entry>(
        _ entries: [(vmOffset: UInt64, entry: Entry)], plan: ImagePlan,
        writeRun: (inout ClosureWriter, Range<Int>, _ run: FixupRun, _ before: FixupRestart) -> Void
    ) -> [UInt8] {
        let segmentOf = { (offset: UInt64) -> Int in plan.segments.firstIndex { $0.contains(offset) } ?? -1 }
        let pageOf = { (offset: UInt64) -> UInt64 in offset / FixupPageIndex.pageSize }
        var runs: [(start: Int, count: Int, stride: UInt64)] = []
        var index = 0
        while index < entries.count {
            let segment = segmentOf(entries[index].vmOffset)
            let page = pageOf(entries[index].vmOffset)
            var count = 1
            var stride: UInt64 = 0
            // On while the next location is in the run's segment and page, at the stride its first two set.
            while index + count < entries.count {
                let next = entries[index + count].vmOffset
                let gap = next - entries[index + count - 1].vmOffset
                guard segmentOf(next) == segment, pageOf(next) == page, count == 1 || gap == stride else { break }
                stride = gap
                count += 1
            }
            runs.append((index, count, stride))
            index += count
        }
        var writer = ClosureWriter()
        writer.uleb(runs.count)
        var previous: UInt64 = 0
        for run in runs {
            let before = FixupRestart(runs: 1, offset: writer.bytes.count, location: previous, target: 0)
            let start = entries[run.start].vmOffset
            writer.uleb(start - previous)
            writer.uleb(run.count)
            writer.uleb(run.stride)
            let last = entries[run.start + run.count - 1].vmOffset
            writeRun(&writer, run.start..<(run.start + run.count), FixupRun(start: start, count: run.count, stride: run.stride, last: last), before)
            previous = last
        }
        return writer.bytes
    }

    /// Rebase runs for `fixups` (the rebases among them).
    package static func encodeRebases(_ fixups: [ResolvedFixup], plan: ImagePlan) -> Encoded {
        let rebases: [(vmOffset: UInt64, entry: RebaseTarget)] = fixups.compactMap { fixup in
            guard case let .rebase(targetOffset, high8) = fixup.kind else { return nil }
            return (fixup.vmOffset, RebaseTarget(offset: targetOffset, high8: high8))
        }
        let sorted = stableSorted(rebases)
        var previousTarget: UInt64 = 0
        var pages = FixupPageIndex.Collector()
        let bytes = encode(sorted, plan: plan) { writer, range, run, before in
            var before = before
            before.target = previousTarget
            pages.add(run, before: before)
            for entry in sorted[range] {
                writer.sleb(Int64(bitPattern: entry.entry.bits &- previousTarget))
                previousTarget = entry.entry.bits
            }
        }
        return Encoded(bytes: bytes, count: rebases.count, pages: pages.restarts)
    }

    /// Bind runs for `fixups` (the binds among them); new targets are added to `targets`.
    package static func encodeBinds(_ fixups: [ResolvedFixup], plan: ImagePlan, targets: inout [BindTarget], targetIndex: inout [BindTarget: Int]) -> Encoded {
        var binds: [(vmOffset: UInt64, entry: (Int, Int64))] = []
        binds.reserveCapacity(fixups.count)
        // Room for every bind's target at once: the table is not grown (and rehashed) bind by bind.
        targetIndex.reserveCapacity(targetIndex.count + fixups.count)
        for fixup in fixups {
            guard case let .bind(target, addend) = fixup.kind else { continue }
            let index: Int
            if let known = targetIndex[target] {
                index = known
            } else {
                index = targets.count
                targets.append(target)
                targetIndex[target] = index
            }
            binds.append((fixup.vmOffset, (index, addend)))
        }
        let sorted = stableSorted(binds)
        var pages = FixupPageIndex.Collector()
        let bytes = encode(sorted, plan: plan) { writer, range, run, before in
            pages.add(run, before: before)
            for entry in sorted[range] {
                writer.uleb(entry.entry.0)
                writer.sleb(entry.entry.1)
            }
        }
        return Encoded(bytes: bytes, count: binds.count, pages: pages.restarts)
    }

    static func stableSorted<Entry>(_ entries: [(vmOffset: UInt64, entry: Entry)]) -> [(vmOffset: UInt64, entry: Entry)] {
        entries.enumerated().sorted { ($0.element.vmOffset, $0.offset) < ($1.element.vmOffset, $1.offset) }.map(\.element)
    }
}

extension LaunchClosure {
    /// Every fixup of image `index`, decoded from its runs: rebases, then binds.
    package func fixups(ofImage index: Int) throws(ClosureError) -> [ResolvedFixup] {
        let image = images[index]
        return try FixupRuns.decode(rebases: FixupRunWalk(image.rebaseRuns), binds: FixupRunWalk(image.bindRuns), targets: bindTargets)
    }

    /// ``fixups(ofImage:)``, a fault named as the launch names it: with the closure's path.
    package func fixups(ofImage index: Int, closurePath: String) throws(ClosureError) -> [ResolvedFixup] {
        try naming(closurePath, image: index) { () throws(ClosureError) in try fixups(ofImage: index) }
    }

    /// The fixups of one indexed page of image `index`, decoded from its restart points alone.
    package func fixups(ofImage index: Int, page: FixupPage) throws(ClosureError) -> [ResolvedFixup] {
        let image = images[index]
        return try FixupRuns.decode(rebases: FixupRunWalk(image.rebaseRuns, restart: page.rebases),
                                    binds: FixupRunWalk(image.bindRuns, restart: page.binds), targets: bindTargets)
    }
}

extension FixupRuns {
    /// The fixups two walks visit, rebases then binds, each bind's target looked up in `bindTargets`.
    static func decode(rebases: FixupRunWalk, binds: FixupRunWalk, targets bindTargets: BindTargetTable) throws(ClosureError) -> [ResolvedFixup] {
        var fixups: [ResolvedFixup] = []
        try ClosureError.walking(.rebases) { () throws(FixupFault) in
            try rebases.forEachRebase { (location, target) throws(FixupFault) in
                fixups.append(ResolvedFixup(vmOffset: location, kind: .rebase(targetOffset: target.offset, high8: target.high8)))
            }
        }
        return fixups + (try ClosureError.walking(.binds) { () throws(FixupFault) in try decodeBinds(binds, targets: bindTargets) })
    }

    /// The binds a walk visits, each target looked up in `bindTargets`.
    static func decodeBinds(_ binds: FixupRunWalk, targets bindTargets: BindTargetTable) throws(FixupFault) -> [ResolvedFixup] {
        var fixups: [ResolvedFixup] = []
        try binds.forEachBind(tableSize: bindTargets.count) { (location, targetIndex, addend) throws(FixupFault) in
            fixups.append(ResolvedFixup(vmOffset: location, kind: .bind(bindTargets[targetIndex], addend: addend)))
        }
        return fixups
    }
}

extension LaunchClosure {
    /// What `body`, a walk of image `index`'s runs, returns; its fault named with the closure's path.
    package func naming<T>(_ closurePath: String, image index: Int, _ body: () throws(ClosureError) -> T) throws(ClosureError) -> T {
        do throws(ClosureError) {
            return try body()
        } catch {
            throw error.naming(closurePath, image: images[index].path)
        }
    }
}
