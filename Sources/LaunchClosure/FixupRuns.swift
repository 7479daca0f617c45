import LoaderCore

/// The encoding of an image's resolved fixups as runs: locations that follow each other
/// at one stride, each with its own target. See docs/closure-format.md.
///
/// Rebase runs: `locationDelta count stride` (ULEB128), then per location the target
/// (offset in the image, top byte at bit 56) as an SLEB128 delta from the previous target.
/// Bind runs: `locationDelta count stride`, then per location `targetIndex` (ULEB128, into
/// the closure's bind-target table) and `addend` (SLEB128).
/// `locationDelta` is from the previous run's last location (0 at the start).
public enum FixupRuns {
    /// Encodes locations sorted by vmOffset (stable: equal locations keep their order).
    /// A run never crosses a segment boundary, so the fast path can check each run against
    /// one segment, nor a page boundary (``FixupPageIndex/pageSize``), so each page's
    /// fixups are whole runs that the page index can point at.
    static func encode<Entry>(
        _ entries: [(vmOffset: UInt64, entry: Entry)], plan: ImagePlan, writeEntry: (inout ClosureWriter, Entry) -> Void
    ) -> [UInt8] {
        let segmentOf = { (offset: UInt64) -> Int in
            plan.segments.firstIndex { offset >= $0.vmOffset && offset - $0.vmOffset < $0.vmSize } ?? -1
        }
        let pageOf = { (offset: UInt64) -> UInt64 in offset / FixupPageIndex.pageSize }
        var writer = ClosureWriter()
        var runs: [(start: Int, count: Int, stride: UInt64)] = []
        var index = 0
        while index < entries.count {
            var count = 1
            var stride: UInt64 = 0
            let segment = segmentOf(entries[index].vmOffset)
            let page = pageOf(entries[index].vmOffset)
            if index + 1 < entries.count, segmentOf(entries[index + 1].vmOffset) == segment, pageOf(entries[index + 1].vmOffset) == page {
                stride = entries[index + 1].vmOffset - entries[index].vmOffset
                count = 2
                while index + count < entries.count,
                      entries[index + count].vmOffset - entries[index + count - 1].vmOffset == stride,
                      segmentOf(entries[index + count].vmOffset) == segment, pageOf(entries[index + count].vmOffset) == page {
                    count += 1
                }
            }
            runs.append((index, count, count == 1 ? 0 : stride))
            index += count
        }
        writer.uleb(runs.count)
        var previous: UInt64 = 0
        for run in runs {
            writer.uleb(entries[run.start].vmOffset - previous)
            writer.uleb(run.count)
            writer.uleb(run.stride)
            for entry in entries[run.start..<(run.start + run.count)] { writeEntry(&writer, entry.entry) }
            previous = entries[run.start + run.count - 1].vmOffset
        }
        return writer.bytes
    }

    /// Rebase runs for `fixups` (the rebases among them).
    public static func encodeRebases(_ fixups: [ResolvedFixup], plan: ImagePlan) -> (bytes: [UInt8], count: Int) {
        let rebases: [(vmOffset: UInt64, entry: UInt64)] = fixups.compactMap { fixup in
            guard case let .rebase(targetOffset, high8) = fixup.kind else { return nil }
            return (fixup.vmOffset, targetOffset | UInt64(high8) << 56)
        }
        let sorted = stableSorted(rebases)
        var previousTarget: UInt64 = 0
        let bytes = encode(sorted, plan: plan) { writer, target in
            writer.sleb(Int64(bitPattern: target &- previousTarget))
            previousTarget = target
        }
        return (bytes, rebases.count)
    }

    /// Bind runs for `fixups` (the binds among them); new targets are added to `targets`.
    public static func encodeBinds(_ fixups: [ResolvedFixup], plan: ImagePlan, targets: inout [BindTarget], targetIndex: inout [BindTarget: Int]) -> (bytes: [UInt8], count: Int) {
        var binds: [(vmOffset: UInt64, entry: (Int, Int64))] = []
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
        let bytes = encode(stableSorted(binds), plan: plan) { writer, entry in
            writer.uleb(entry.0)
            writer.sleb(entry.1)
        }
        return (bytes, binds.count)
    }

    static func stableSorted<Entry>(_ entries: [(vmOffset: UInt64, entry: Entry)]) -> [(vmOffset: UInt64, entry: Entry)] {
        entries.enumerated().sorted { ($0.element.vmOffset, $0.offset) < ($1.element.vmOffset, $1.offset) }.map(\.element)
    }
}

/// One run of fixups: `count` locations from `start`, `stride` bytes apart (offsets from the
/// image's base). The walker has checked that `last` = start + (count − 1) × stride does not
/// overflow.
public struct FixupRun: Equatable, Sendable {
    public let start: UInt64
    public let count: Int
    public let stride: UInt64
    public let last: UInt64
}

/// The one decoder of fixup runs (docs/closure-format.md), as a cursor: ``nextRun()`` reads a
/// run header, then the caller reads that run's `count` entries with ``nextRebaseTarget()``
/// or ``nextBind()``, and ``finish()`` refuses bytes after the last run. The fast path's apply
/// loop (``LaunchClosure/applyFixups(ofImage:memory:targetValues:closurePath:)``) checks each
/// run it gets before its first store; verify, the dump and the tests collect the same
/// fixups through the same cursor (``LaunchClosure/fixups(ofImage:)``). No allocation, no
/// closure per fixup.
public struct FixupRunCursor {
    var reader: ClosureReader
    private var runsLeft: Int
    private var location: UInt64 = 0
    /// How many runs the cursor covers: the stream's run count, or a restart's page runs.
    public let runsTotal: Int
    /// Whether the cursor covers one page's runs (from a restart point) rather than the stream.
    public let isRestart: Bool

    /// The fewest bytes a run takes (start, count and stride, a byte each): what bounds a
    /// stream's run count by its length.
    static let minimumRunSize = 3

    /// A cursor over one encoded run stream; reads its run count.
    public init(_ runs: ArraySlice<UInt8>, path: String) throws(ClosureError) {
        reader = ClosureReader(runs, path: path)
        runsLeft = try reader.count(of: "run", minimumSize: Self.minimumRunSize)
        runsTotal = runsLeft
        isRestart = false
    }

    /// A cursor over one page's runs of a stream, from the page index's restart point: the
    /// byte offset of the page's first run header, the delta state there, and how many runs
    /// the page has. A restart past the stream's end fails on the first read.
    @inline(__always)
    public init(_ runs: ArraySlice<UInt8>, path: String, restart: FixupRestart) {
        reader = ClosureReader(runs, path: path)
        reader.position = runs.startIndex + restart.offset
        runsLeft = restart.runs
        runsTotal = restart.runs
        isRestart = true
        location = restart.location
    }

    /// The byte offset of the next run's header in its stream (the page index's restart
    /// offsets; errors name offsets in the body).
    public var offset: Int { reader.position - reader.bytes.startIndex }
    /// The last location of the run read last (0 before the first): the next run's delta base.
    public var previousLocation: UInt64 { location }

    /// The next run's header, or nil after the last run. Refuses empty and overflowing runs.
    @inline(__always)
    public mutating func nextRun() throws(ClosureError) -> FixupRun? {
        guard runsLeft > 0 else { return nil }
        runsLeft -= 1
        let (start, overflow) = location.addingReportingOverflow(try reader.uleb())
        let count = try reader.count(of: "fixup in run")
        let stride = try reader.uleb()
        guard !overflow, count > 0 else { throw reader.corrupt("empty or overflowing run") }
        let (span, spanOverflow) = UInt64(count - 1).multipliedReportingOverflow(by: stride)
        let (last, lastOverflow) = start.addingReportingOverflow(span)
        guard !spanOverflow, !lastOverflow else { throw reader.corrupt("run overflows the address space") }
        location = last
        return FixupRun(start: start, count: count, stride: stride, last: last)
    }

    /// The next rebase entry's target: offset in the image, top byte at bit 56, delta-coded
    /// from `previous`, the stream's previous rebase target (0 before the first; the caller
    /// carries it, across runs, so it stays in a register).
    @inline(__always)
    public mutating func nextRebaseTarget(after previous: UInt64) throws(ClosureError) -> UInt64 {
        previous &+ UInt64(bitPattern: try reader.sleb())
    }

    /// The next bind entry: its bind-target index (not yet checked against the table) and addend.
    @inline(__always)
    public mutating func nextBind() throws(ClosureError) -> (targetIndex: UInt64, addend: Int64) {
        (try reader.uleb(), try reader.sleb())
    }

    /// Refuses bytes after the last run (call once ``nextRun()`` returned nil).
    public func finish() throws(ClosureError) {
        guard reader.atEnd else { throw reader.corrupt("bytes after the last run") }
    }
}

extension LaunchClosure {
    /// Every fixup of image `index`, decoded from its runs: rebases, then binds (verify, dump, tests).
    public func fixups(ofImage index: Int) throws(ClosureError) -> [ResolvedFixup] {
        let image = images[index]
        return try FixupRuns.decode(rebaseRuns: image.rebaseRuns, bindRuns: image.bindRuns, targets: bindTargets, path: image.path)
    }
}

extension LaunchClosure {
    /// The fixups of one indexed page of image `index`, decoded from its restart points
    /// alone: rebases, then binds (verify, tests).
    public func fixups(ofImage index: Int, page: FixupPage) throws(ClosureError) -> [ResolvedFixup] {
        let image = images[index]
        return try FixupRuns.decode(
            rebases: FixupRunCursor(image.rebaseRuns, path: image.path, restart: page.rebases), firstTarget: page.rebases.target,
            binds: FixupRunCursor(image.bindRuns, path: image.path, restart: page.binds), targets: bindTargets, path: image.path)
    }
}

extension FixupRuns {
    /// The fixups two run streams hold, rebases then binds, each bind's target looked up in `bindTargets`.
    static func decode(rebaseRuns: ArraySlice<UInt8>, bindRuns: ArraySlice<UInt8>, targets bindTargets: BindTargetTable, path: String) throws(ClosureError) -> [ResolvedFixup] {
        try decode(rebases: FixupRunCursor(rebaseRuns, path: path), firstTarget: 0, binds: FixupRunCursor(bindRuns, path: path),
                   targets: bindTargets, path: path)
    }

    /// The fixups two cursors hold, rebases then binds; a whole-stream cursor must end at its stream's end.
    static func decode(rebases: FixupRunCursor, firstTarget: UInt64, binds: FixupRunCursor, targets bindTargets: BindTargetTable,
                       path: String) throws(ClosureError) -> [ResolvedFixup] {
        var (rebases, binds) = (rebases, binds)
        var fixups: [ResolvedFixup] = []
        var target = firstTarget
        while let run = try rebases.nextRun() {
            for step in 0..<run.count {
                target = try rebases.nextRebaseTarget(after: target)
                fixups.append(ResolvedFixup(vmOffset: run.start &+ UInt64(step) &* run.stride, kind: .rebase(
                    targetOffset: target & 0x00ff_ffff_ffff_ffff, high8: UInt8(target >> 56))))
            }
        }
        if !rebases.isRestart { try rebases.finish() }
        while let run = try binds.nextRun() {
            for step in 0..<run.count {
                let (targetIndex, addend) = try binds.nextBind()
                guard targetIndex < UInt64(bindTargets.count) else {
                    throw .corrupt(path: path, offset: binds.reader.position,
                                   what: "bind target index \(targetIndex) is past the \(bindTargets.count)-entry table")
                }
                fixups.append(ResolvedFixup(vmOffset: run.start &+ UInt64(step) &* run.stride,
                                            kind: .bind(bindTargets[Int(targetIndex)], addend: addend)))
            }
        }
        if !binds.isRestart { try binds.finish() }
        return fixups
    }
}
