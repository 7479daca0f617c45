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
    /// one segment.
    static func encode<Entry>(
        _ entries: [(vmOffset: UInt64, entry: Entry)], plan: ImagePlan, writeEntry: (inout ClosureWriter, Entry) -> Void
    ) -> [UInt8] {
        let segmentOf = { (offset: UInt64) -> Int in
            plan.segments.firstIndex { offset >= $0.vmOffset && offset - $0.vmOffset < $0.vmSize } ?? -1
        }
        var writer = ClosureWriter()
        var runs: [(start: Int, count: Int, stride: UInt64)] = []
        var index = 0
        while index < entries.count {
            var count = 1
            var stride: UInt64 = 0
            let segment = segmentOf(entries[index].vmOffset)
            if index + 1 < entries.count, segmentOf(entries[index + 1].vmOffset) == segment {
                stride = entries[index + 1].vmOffset - entries[index].vmOffset
                count = 2
                while index + count < entries.count,
                      entries[index + count].vmOffset - entries[index + count - 1].vmOffset == stride,
                      segmentOf(entries[index + count].vmOffset) == segment {
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

/// What a walk over an image's fixup runs does: checks each run once before its first
/// fixup, then takes each fixup. ``FixupRuns/walkRebases(_:path:_:)`` and
/// ``FixupRuns/walkBinds(_:path:_:)`` are the one decoder of runs: the fast path's apply
/// loop, verification, the dump and the tests all walk through them.
public protocol FixupRunVisitor {
    associatedtype Failure: Error
    /// What a malformed run stream (truncated, overflowing, bytes after the last run) becomes.
    func failure(_ error: ClosureError) -> Failure
    /// Called once per run, before its first fixup; the walker has checked the run's last
    /// location does not overflow.
    mutating func beginRun(start: UInt64, count: Int, stride: UInt64) throws(Failure)
}

/// Takes the rebases of a walk over rebase runs.
public protocol RebaseRunVisitor: FixupRunVisitor {
    /// One rebase: its location (offset from the image's base) and its target (offset in the
    /// image, top byte at bit 56).
    mutating func rebase(at location: UInt64, target: UInt64) throws(Failure)
}

/// Takes the binds of a walk over bind runs.
public protocol BindRunVisitor: FixupRunVisitor {
    /// One bind: its location, its index in the closure's bind-target table (unchecked) and its addend.
    mutating func bind(at location: UInt64, targetIndex: Int, addend: Int64) throws(Failure)
}

extension FixupRuns {
    /// Walks rebase runs, handing each rebase to `visitor`.
    @inline(__always)
    public static func walkRebases<V: RebaseRunVisitor>(_ runs: [UInt8], path: String, _ visitor: inout V) throws(V.Failure) {
        var target: UInt64 = 0
        try walkRuns(runs, path: path, &visitor) { (reader, location, visitor) throws(V.Failure) in
            let delta: Int64
            do throws(ClosureError) { delta = try reader.sleb() } catch { throw visitor.failure(error) }
            target = target &+ UInt64(bitPattern: delta)
            try visitor.rebase(at: location, target: target)
        }
    }

    /// Walks bind runs, handing each bind to `visitor`.
    @inline(__always)
    public static func walkBinds<V: BindRunVisitor>(_ runs: [UInt8], path: String, _ visitor: inout V) throws(V.Failure) {
        try walkRuns(runs, path: path, &visitor) { (reader, location, visitor) throws(V.Failure) in
            let index: Int, addend: Int64
            do throws(ClosureError) {
                index = try reader.int("bind target index")
                addend = try reader.sleb()
            } catch {
                throw visitor.failure(error)
            }
            try visitor.bind(at: location, targetIndex: index, addend: addend)
        }
    }

    /// Walks the run headers: `runCount`, then per run `locationDelta count stride` and
    /// `count` payloads, which `payload` reads. Rejects empty and overflowing runs and bytes
    /// after the last run.
    @inline(__always)
    static func walkRuns<V: FixupRunVisitor>(
        _ runs: [UInt8], path: String, _ visitor: inout V,
        payload: (inout ClosureReader, UInt64, inout V) throws(V.Failure) -> Void
    ) throws(V.Failure) {
        var reader = ClosureReader(runs, path: path)
        let runCount: Int
        do throws(ClosureError) { runCount = try reader.count(of: "run", minimumSize: 3) } catch { throw visitor.failure(error) }
        var location: UInt64 = 0
        for _ in 0..<runCount {
            let start: UInt64, count: Int, stride: UInt64, last: UInt64
            do throws(ClosureError) { (start, count, stride, last) = try runHeader(&reader, after: location) } catch { throw visitor.failure(error) }
            try visitor.beginRun(start: start, count: count, stride: stride)
            var at = start
            try payload(&reader, at, &visitor)
            for _ in 1..<count {
                at &+= stride
                try payload(&reader, at, &visitor)
            }
            location = last
        }
        guard reader.atEnd else { throw visitor.failure(reader.corrupt("bytes after the last run")) }
    }

    /// One run header: its first and last locations (checked not to overflow), count and stride.
    @inline(__always)
    static func runHeader(_ reader: inout ClosureReader, after location: UInt64) throws(ClosureError) -> (UInt64, Int, UInt64, UInt64) {
        let (start, overflow) = location.addingReportingOverflow(try reader.uleb())
        let count = try reader.count(of: "fixup in run")
        let stride = try reader.uleb()
        guard !overflow, count > 0 else { throw reader.corrupt("empty or overflowing run") }
        let (span, spanOverflow) = UInt64(count - 1).multipliedReportingOverflow(by: stride)
        let (last, lastOverflow) = start.addingReportingOverflow(span)
        guard !spanOverflow, !lastOverflow else { throw reader.corrupt("run overflows the address space") }
        return (start, count, stride, last)
    }
}

/// Collects decoded fixups (verify, dump, tests; the fast path writes them instead).
struct FixupCollector: RebaseRunVisitor, BindRunVisitor {
    typealias Failure = ClosureError
    let targets: [BindTarget]
    let path: String
    var fixups: [ResolvedFixup] = []

    func failure(_ error: ClosureError) -> ClosureError { error }
    func beginRun(start: UInt64, count: Int, stride: UInt64) {}

    mutating func rebase(at location: UInt64, target: UInt64) {
        fixups.append(ResolvedFixup(vmOffset: location, kind: .rebase(targetOffset: target & 0x00ff_ffff_ffff_ffff, high8: UInt8(target >> 56))))
    }

    mutating func bind(at location: UInt64, targetIndex: Int, addend: Int64) throws(ClosureError) {
        guard targetIndex < targets.count else {
            throw .corrupt(path: path, offset: 0, what: "bind target index \(targetIndex) is past the \(targets.count)-entry table")
        }
        fixups.append(ResolvedFixup(vmOffset: location, kind: .bind(targets[targetIndex], addend: addend)))
    }
}

extension LaunchClosure {
    /// Every fixup of image `index`, decoded from its runs: rebases, then binds (verify, dump, tests).
    public func fixups(ofImage index: Int) throws(ClosureError) -> [ResolvedFixup] {
        let image = images[index]
        var collector = FixupCollector(targets: bindTargets, path: image.path)
        try FixupRuns.walkRebases(image.rebaseRuns, path: image.path, &collector)
        try FixupRuns.walkBinds(image.bindRuns, path: image.path, &collector)
        return collector.fixups
    }
}
