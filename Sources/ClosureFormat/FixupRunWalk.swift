import LaunchPlan

/// The one walker and decoder of the fixup-run format (docs/closure-format.md, "Fixup runs"),
/// in dyld's `forEachRebase`/`forEachBind` shape. It owns every check before a store: each run
/// header decoded (a count bounded by the bytes left, not empty, no overflow) and accepted by
/// the walk's ``FixupRunBounds`` before any of its entries; each rebase target inside the
/// image, each bind target index inside the table; a whole stream ending at its last run.
/// It reads through a pointer with one compare per byte and allocates nothing, so the page-in
/// fill runs it inside its fault handler; its faults name the byte offset in the closure body.
///
/// A stream's layout, all numbers LEB128:
///
///     uleb runCount, then per run:
///       uleb locationDelta   (from the previous run's last location; 0 at the start)
///       uleb count           (≥ 1)
///       uleb stride
///       count entries:  rebase runs: sleb targetDelta (a RebaseTarget's bits, from the
///                                    stream's previous target; 0 at the start)
///                       bind runs:   uleb targetIndex, sleb addend
package struct FixupRunWalk {
    /// The fewest bytes a run takes (delta, count and stride): bounds a stream's run count.
    package static let minimumRunSize = 3
    /// The bytes every fixup writes.
    package static let storeSize: UInt64 = 8

    @usableFromInline let runs: ArraySlice<UInt8>
    @usableFromInline let restart: FixupRestart?

    /// A walk of a whole stream (its run count first, nothing after its last run).
    @inlinable
    package init(_ runs: ArraySlice<UInt8>) {
        self.runs = runs
        restart = nil
    }

    /// A walk of one page's runs of a stream, from the page index's restart point.
    @inlinable
    package init(_ runs: ArraySlice<UInt8>, restart: FixupRestart) {
        self.runs = runs
        self.restart = restart
    }

    /// Walks a rebase stream: each run accepted by `bounds`, each target below `imageSize`.
    @inlinable @inline(__always)
    package func rebases<Bounds: FixupRunBounds, Visitor: FixupRunVisitor>(
        within bounds: Bounds, imageSize: UInt64, into visitor: inout Visitor
    ) throws(FixupFault) where Visitor.Accepted == Bounds.Accepted {
        try rebases(within: bounds, imageSize: imageSize) { (accepted, run, before) throws(FixupFault) in
            try visitor.visitRun(accepted, run, before: before)
        } rebase: { (location, target, accepted) throws(FixupFault) in
            try visitor.visitRebase(at: location, target: target, in: accepted)
        }
    }

    /// Walks a bind stream: each run accepted by `bounds`, each target index below `tableSize`.
    @inlinable @inline(__always)
    package func binds<Bounds: FixupRunBounds, Visitor: FixupRunVisitor>(
        within bounds: Bounds, tableSize: Int, into visitor: inout Visitor
    ) throws(FixupFault) where Visitor.Accepted == Bounds.Accepted {
        try binds(within: bounds, tableSize: tableSize) { (accepted, run, before) throws(FixupFault) in
            try visitor.visitRun(accepted, run, before: before)
        } bind: { (location, targetIndex, addend, accepted) throws(FixupFault) in
            try visitor.visitBind(at: location, targetIndex: targetIndex, addend: addend, in: accepted)
        }
    }

    /// ``rebases(within:imageSize:into:)`` with the visitor's two steps as closures.
    @inlinable @inline(__always)
    func rebases<Bounds: FixupRunBounds>(
        within bounds: Bounds, imageSize: UInt64,
        run visitRun: (Bounds.Accepted, FixupRun, FixupRestart) throws(FixupFault) -> Void,
        rebase: (UInt64, RebaseTarget, Bounds.Accepted) throws(FixupFault) -> Void
    ) throws(FixupFault) {
        try withStream { (stream) throws(FixupFault) in
            var target = restart?.target ?? 0
            try walk(&stream, bounds) { (run, accepted, before, stream) throws(FixupFault) in
                try visitRun(accepted, run, FixupRestart(runs: 1, offset: before.offset, location: before.location, target: target))
                var location = run.start
                for _ in 0..<run.count {
                    guard let delta = stream.sleb() else { throw fault(at: stream.consumed, signed: true) }
                    target &+= delta
                    let rebaseTarget = RebaseTarget(bits: target)
                    guard rebaseTarget.offset < imageSize else { throw .rebaseTargetOutsideImage(target: rebaseTarget.offset) }
                    try rebase(location, rebaseTarget, accepted)
                    location &+= run.stride
                }
            }
        }
    }

    /// ``binds(within:tableSize:into:)`` with the visitor's two steps as closures.
    @inlinable @inline(__always)
    func binds<Bounds: FixupRunBounds>(
        within bounds: Bounds, tableSize: Int,
        run visitRun: (Bounds.Accepted, FixupRun, FixupRestart) throws(FixupFault) -> Void,
        bind: (UInt64, Int, Int64, Bounds.Accepted) throws(FixupFault) -> Void
    ) throws(FixupFault) {
        try withStream { (stream) throws(FixupFault) in
            let limit = UInt64(tableSize)
            try walk(&stream, bounds) { (run, accepted, before, stream) throws(FixupFault) in
                try visitRun(accepted, run, before)
                var location = run.start
                for _ in 0..<run.count {
                    guard let index = stream.uleb() else { throw fault(at: stream.consumed, signed: false) }
                    guard let addend = stream.sleb() else { throw fault(at: stream.consumed, signed: true) }
                    guard index < limit else { throw .bindTargetPastTable(index: index, tableSize: tableSize) }
                    try bind(location, Int(index), Int64(bitPattern: addend), accepted)
                    location &+= run.stride
                }
            }
        }
    }

    /// The runs, each header decoded, checked and accepted by `bounds`, handed to `entries`
    /// with the restart point before it to read its entries.
    @inlinable @inline(__always)
    func walk<Bounds: FixupRunBounds>(
        _ stream: inout UnsafeRawStream, _ bounds: Bounds,
        entries: (_ run: FixupRun, _ accepted: Bounds.Accepted, _ before: FixupRestart, _ stream: inout UnsafeRawStream) throws(FixupFault) -> Void
    ) throws(FixupFault) {
        var runsLeft: Int
        var location: UInt64
        if let restart {
            guard restart.offset >= 0, restart.offset <= runs.count else {
                throw .corrupt(byteOffset: runs.startIndex, .restartPastEnd)
            }
            stream.skip(restart.offset)
            runsLeft = restart.runs
            location = restart.location
        } else {
            runsLeft = try count(&stream, minimumSize: Self.minimumRunSize, else: .runCountTooLarge)
            location = 0
        }
        while runsLeft > 0 {
            runsLeft -= 1
            let header = stream.consumed
            guard let delta = stream.uleb() else { throw fault(at: stream.consumed, signed: false) }
            let count = try count(&stream, minimumSize: 1, else: .entryCountTooLarge)
            guard let stride = stream.uleb() else { throw fault(at: stream.consumed, signed: false) }
            guard count > 0 else { throw .corrupt(byteOffset: runs.startIndex + header, .emptyRun) }
            let (start, overflow) = location.addingReportingOverflow(delta)
            guard !overflow, let run = FixupRun(start: start, count: count, stride: stride) else {
                throw .corrupt(byteOffset: runs.startIndex + header, .runOverflows)
            }
            guard let accepted = bounds.accept(run) else { throw bounds.fault(run) }
            try entries(run, accepted, FixupRestart(runs: 1, offset: header, location: location, target: 0), &stream)
            location = run.last
        }
        if restart == nil, !stream.atEnd {
            throw .corrupt(byteOffset: runs.startIndex + stream.consumed, .bytesAfterLastRun)
        }
    }

    /// A count of items of at least `minimumSize` bytes each, no more than the bytes left hold.
    @inlinable @inline(__always)
    func count(_ stream: inout UnsafeRawStream, minimumSize: Int, else corruption: FixupFault.Corruption) throws(FixupFault) -> Int {
        let start = stream.consumed
        guard let value = stream.uleb() else { throw fault(at: start, signed: false) }
        guard value <= UInt64(stream.remaining / minimumSize) else { throw .corrupt(byteOffset: runs.startIndex + start, corruption) }
        return Int(value)
    }

    /// Why the number at `offset` (from the slice's start) does not decode, read again by the
    /// checked decoder (truncated or over 64 bits): only a refused stream gets here.
    @usableFromInline
    func fault(at offset: Int, signed: Bool) -> FixupFault {
        var position = runs.startIndex + offset
        let decoded = signed ? ClosureLEB128.signed(runs, &position).map(UInt64.init(bitPattern:)) : ClosureLEB128.unsigned(runs, &position)
        if case let .failure(fault) = decoded { return fault }
        return .corrupt(byteOffset: runs.startIndex + offset, .truncatedNumber)
    }

    /// The run count a stream starts with, bounded as the walk bounds it.
    static func runCount(_ runs: ArraySlice<UInt8>, path: String) throws(ClosureError) -> Int {
        let walk = FixupRunWalk(runs)
        do throws(FixupFault) {
            return try walk.withStream { (stream) throws(FixupFault) in
                try walk.count(&stream, minimumSize: minimumRunSize, else: .runCountTooLarge)
            }
        } catch {
            var end = runs.startIndex
            _ = ClosureLEB128.unsigned(runs, &end)
            throw .corrupt(path: path, offset: end, what: "run stream: \(error)")
        }
    }
}

/// A consumer of a run stream: each accepted run (with the stream's state at its header), then
/// its entries, every one already checked by the walk (locations are offsets from the image's base).
package protocol FixupRunVisitor {
    associatedtype Accepted
    mutating func visitRun(_ accepted: Accepted, _ run: FixupRun, before: FixupRestart) throws(FixupFault)
    mutating func visitRebase(at location: UInt64, target: RebaseTarget, in run: Accepted) throws(FixupFault)
    mutating func visitBind(at location: UInt64, targetIndex: Int, addend: Int64, in run: Accepted) throws(FixupFault)
}

extension FixupRunVisitor {
    @inlinable package mutating func visitRun(_ accepted: Accepted, _ run: FixupRun, before: FixupRestart) throws(FixupFault) {}
    @inlinable package mutating func visitRebase(at location: UInt64, target: RebaseTarget, in run: Accepted) throws(FixupFault) {}
    @inlinable package mutating func visitBind(at location: UInt64, targetIndex: Int, addend: Int64, in run: Accepted) throws(FixupFault) {}
}



extension FixupRunWalk {
    /// Walks a rebase stream with closures, every run accepted (``EveryRun``), each target
    /// below `imageSize`: `run` gets each run and its restart point, `rebase` each fixup.
    package func forEachRebase(imageSize: UInt64 = .max, run visitRun: (_ run: FixupRun, _ before: FixupRestart) throws(FixupFault) -> Void = { _, _ in },
                              _ rebase: (_ location: UInt64, _ target: RebaseTarget) throws(FixupFault) -> Void) throws(FixupFault) {
        try rebases(within: EveryRun(), imageSize: imageSize) { (_, run, before) throws(FixupFault) in
            try visitRun(run, before)
        } rebase: { (location, target, _) throws(FixupFault) in
            try rebase(location, target)
        }
    }

    /// ``forEachRebase(imageSize:run:_:)`` for a bind stream, each target index below `tableSize`.
    package func forEachBind(tableSize: Int = .max, run visitRun: (_ run: FixupRun, _ before: FixupRestart) throws(FixupFault) -> Void = { _, _ in },
                            _ bind: (_ location: UInt64, _ targetIndex: Int, _ addend: Int64) throws(FixupFault) -> Void) throws(FixupFault) {
        try binds(within: EveryRun(), tableSize: tableSize) { (_, run, before) throws(FixupFault) in
            try visitRun(run, before)
        } bind: { (location, targetIndex, addend, _) throws(FixupFault) in
            try bind(location, targetIndex, addend)
        }
    }
}
