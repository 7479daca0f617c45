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
    static func encodeRebases(_ fixups: [ResolvedFixup], plan: ImagePlan) -> (bytes: [UInt8], count: Int) {
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
    static func encodeBinds(_ fixups: [ResolvedFixup], plan: ImagePlan, targets: inout [BindTarget], targetIndex: inout [BindTarget: Int]) -> (bytes: [UInt8], count: Int) {
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

    /// Decodes runs into resolved fixups (for verify, dump and tests; the fast path
    /// applies runs without materializing them).
    static func decode(rebases: Range<Int>, binds: Range<Int>, in bytes: [UInt8], targets: [BindTarget], path: String) throws(ClosureError) -> [ResolvedFixup] {
        var fixups: [ResolvedFixup] = []
        try forEachRebase(rebases, in: bytes, path: path) { location, target in
            fixups.append(ResolvedFixup(vmOffset: location, kind: .rebase(targetOffset: target & 0x00ff_ffff_ffff_ffff, high8: UInt8(target >> 56))))
        }
        try forEachBind(binds, in: bytes, path: path) { location, index, addend throws(ClosureError) in
            guard index < targets.count else {
                throw .corrupt(path: path, offset: binds.lowerBound, what: "bind target index \(index) is past the \(targets.count)-entry table")
            }
            fixups.append(ResolvedFixup(vmOffset: location, kind: .bind(targets[index], addend: addend)))
        }
        return fixups
    }

    /// Calls `body` with each rebase's location and target (top byte at bit 56).
    static func forEachRebase(_ range: Range<Int>, in bytes: [UInt8], path: String,
                              _ body: (UInt64, UInt64) throws(ClosureError) -> Void) throws(ClosureError) {
        var reader = ClosureReader(bytes, path: path, range: range)
        var target: UInt64 = 0
        try forEachRun(&reader) { (location, reader) throws(ClosureError) in
            target = target &+ UInt64(bitPattern: try reader.sleb())
            try body(location, target)
        }
    }

    /// Calls `body` with each bind's location, target index and addend.
    static func forEachBind(_ range: Range<Int>, in bytes: [UInt8], path: String,
                            _ body: (UInt64, Int, Int64) throws(ClosureError) -> Void) throws(ClosureError) {
        var reader = ClosureReader(bytes, path: path, range: range)
        try forEachRun(&reader) { (location, reader) throws(ClosureError) in
            let index = try reader.int("bind target index")
            try body(location, index, try reader.sleb())
        }
    }

    /// Walks the run headers; `entry` reads each location's payload.
    static func forEachRun(_ reader: inout ClosureReader, _ entry: (UInt64, inout ClosureReader) throws(ClosureError) -> Void) throws(ClosureError) {
        let runs = try reader.count(of: "run", minimumSize: 3)
        var location: UInt64 = 0
        for _ in 0..<runs {
            let (start, overflow) = location.addingReportingOverflow(try reader.uleb())
            let count = try reader.count(of: "fixup in run")
            let stride = try reader.uleb()
            guard !overflow, count > 0 else { throw reader.corrupt("empty or overflowing run") }
            location = start
            for index in 0..<count {
                if index > 0 {
                    let (next, overflow) = location.addingReportingOverflow(stride)
                    guard !overflow else { throw reader.corrupt("run overflows the address space") }
                    location = next
                }
                try entry(location, &reader)
            }
        }
        guard reader.atEnd else { throw reader.corrupt("bytes after the last run") }
    }
}
