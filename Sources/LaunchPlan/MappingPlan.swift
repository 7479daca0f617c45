import MachOReader

/// How to map one segment: where it goes relative to the image's base, which file bytes back
/// it, and its protections.
package struct SegmentPlan: Equatable, Sendable {
    package var name: String
    /// Offset of the segment from the image's preferred base (its lowest mapped vmaddr).
    package var vmOffset: UInt64
    package var vmSize: UInt64
    /// Absolute offset in the file (a universal slice's offset included).
    package var fileOffset: UInt64
    package var fileSize: UInt64
    package var protection: VMProtection
    /// `__DATA_CONST` (or `SG_READ_ONLY`): writable while fixups are applied, then read-only.
    package var readOnlyAfterFixups: Bool

    package init(name: String, vmOffset: UInt64, vmSize: UInt64, fileOffset: UInt64, fileSize: UInt64,
                protection: VMProtection, readOnlyAfterFixups: Bool) {
        (self.name, self.vmOffset, self.vmSize, self.fileOffset, self.fileSize) = (name, vmOffset, vmSize, fileOffset, fileSize)
        (self.protection, self.readOnlyAfterFixups) = (protection, readOnlyAfterFixups)
    }

    /// Whether fixups may be written into this segment.
    package var isWritable: Bool { protection.contains(.write) || readOnlyAfterFixups }

    /// `__DATA_CONST`, or any segment with `SG_READ_ONLY`.
    @inline(__always)
    package static func isReadOnlyAfterFixups(isDataConst: Bool, flags: UInt32) -> Bool {
        isDataConst || flags & ImagePlan.segmentReadOnlyFlag != 0
    }
}

/// How to map one image: its file, its preferred base and its segments.
package struct ImagePlan: Equatable, Sendable {
    package var path: String
    /// The lowest vmaddr of a mapped segment (`__TEXT`'s, 0 for a dylib).
    package var preferredBase: UInt64
    /// Bytes from the preferred base to the end of the last segment.
    package var vmSize: UInt64
    package var segments: [SegmentPlan]

    package init(path: String, preferredBase: UInt64, vmSize: UInt64, segments: [SegmentPlan]) {
        (self.path, self.preferredBase, self.vmSize, self.segments) = (path, preferredBase, vmSize, segments)
    }

    /// Whether the `size` bytes at `offset` (from the image's base) lie inside one writable
    /// segment: where a launch may write anything besides fixups (thread-local descriptors,
    /// the host services table, the Objective-C step's words).
    package func isWritable(offset: UInt64, size: UInt64) -> Bool {
        segments.contains { segment in
            segment.isWritable && offset >= segment.vmOffset && size <= segment.vmSize && offset - segment.vmOffset <= segment.vmSize - size
        }
    }

    /// `SG_READ_ONLY`: the segment becomes read-only once fixups are applied.
    static let segmentReadOnlyFlag: UInt32 = 0x10

    /// The plan for a parsed image found at `path`, whose slice starts at `sliceOffset`.
    package init(image: MachOImage, path: String, sliceOffset: Int) throws(LoadError) {
        try self.init(segments: image.segments, path: path, sliceOffset: UInt64(sliceOffset), sliceSize: UInt64(image.view.count))
    }

    /// The plan for `segments` (an image's `LC_SEGMENT_64`s, in order) of the image at `path`,
    /// whose `sliceSize`-byte slice starts at `sliceOffset`: the one derivation, from the parsed
    /// image or from the header a launch mapped to check its closure's plan.
    package init(segments imageSegments: [Segment], path: String, sliceOffset: UInt64, sliceSize: UInt64) throws(LoadError) {
        let mapped = imageSegments.filter { Segment.isMapped(initialProtection: $0.initialProtection, fileSize: $0.fileSize, vmSize: $0.vmSize) }
        guard let base = mapped.map(\.vmAddress).min() else {
            throw .unusable(path: path, reason: "has no segment to map")
        }
        var segments: [SegmentPlan] = []
        var end: UInt64 = 0
        for segment in mapped {
            let (top, overflow) = segment.vmAddress.addingReportingOverflow(segment.vmSize)
            guard !overflow, segment.fileSize <= segment.vmSize,
                  segment.fileOffset <= sliceSize, segment.fileSize <= sliceSize - segment.fileOffset else {
                throw .malformed(MachOError.malformed("segment \(segment.name) has an impossible range", at: Int(sliceOffset)).inFile(path))
            }
            end = max(end, top - base)
            segments.append(SegmentPlan(
                name: segment.name, vmOffset: segment.vmAddress - base, vmSize: segment.vmSize,
                fileOffset: sliceOffset + segment.fileOffset, fileSize: segment.fileSize,
                protection: segment.initialProtection,
                readOnlyAfterFixups: SegmentPlan.isReadOnlyAfterFixups(isDataConst: segment.name == "__DATA_CONST", flags: segment.flags)))
        }
        self.init(path: path, preferredBase: base, vmSize: end, segments: segments)
    }
}

/// The ranges of an image that fixups may be written to: per writable segment of at least 8
/// bytes, its offset and the largest distance from it at which an 8-byte store still fits. The
/// one definition of "a fixup the image allows", for the writer and the page-in check alike.
package struct WritableRanges: Sendable {
    @usableFromInline let ranges: [(start: UInt64, lastStore: UInt64)]
    /// Whether `ranges` ascend without overlap: then a location's range is found by binary
    /// search (a prelinked set has hundreds), else by a scan (an image's two or three).
    @usableFromInline let ascending: Bool

    package init(_ plan: ImagePlan) {
        ranges = plan.segments.compactMap { segment in
            segment.isWritable && segment.vmSize >= 8 ? (segment.vmOffset, segment.vmSize - 8) : nil
        }
        ascending = zip(ranges, ranges.dropFirst()).allSatisfy { $0.start < $1.start && $1.start - $0.start >= 8 && $0.lastStore <= $1.start - $0.start - 8 }
    }

    /// Whether 8-byte stores at every location from `start` to `last` (offsets from the
    /// image's base) lie inside one writable segment.
    @inlinable
    package func accepts(start: UInt64, last: UInt64) -> Bool {
        holding(start: start, last: last) != nil
    }

    /// The range holding 8-byte stores at every location from `start` to `last`, if one does.
    @inlinable
    func holding(start: UInt64, last: UInt64) -> (start: UInt64, lastStore: UInt64)? {
        guard last >= start else { return nil }
        if ascending, ranges.count > 4 {
            // The last range starting at or before `start`: the only one that can hold it.
            let after = ranges.partitionPoint { $0.start <= start }
            guard after > 0 else { return nil }
            let range = ranges[after - 1]
            return last - range.start <= range.lastStore ? range : nil
        }
        for range in ranges where start >= range.start && last - range.start <= range.lastStore {
            return range
        }
        return nil
    }

    /// How many locations a run from `start` to `last` may hold: one per 4 bytes of its writable
    /// segment (the density the reader allows chained fixups); nil when none holds it.
    @inlinable
    package func capacity(start: UInt64, last: UInt64) -> UInt64? {
        holding(start: start, last: last).map { ($0.lastStore + 8) / 4 }
    }

    /// Whether `run` lies inside one writable segment and holds no more locations than it has
    /// room for: the work a run can ask for is bounded by the image it writes.
    @inlinable
    package func accepts(_ run: FixupRun) -> Bool {
        guard let capacity = capacity(start: run.start, last: run.last) else { return false }
        return UInt64(run.count) <= capacity
    }

    package func fault(_ run: FixupRun) -> FixupFault {
        guard let capacity = capacity(start: run.start, last: run.last) else { return .runOutsideSegments(start: run.start, last: run.last) }
        return .runLongerThanSegment(start: run.start, count: run.count, capacity: capacity)
    }

    /// Whether an 8-byte store at `vmOffset` lies inside one writable segment.
    @inlinable
    package func accepts(_ vmOffset: UInt64) -> Bool { accepts(start: vmOffset, last: vmOffset) }
}
