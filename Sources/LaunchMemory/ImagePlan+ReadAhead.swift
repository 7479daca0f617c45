import LaunchPlan

extension ImagePlan {
    /// The file bytes a launch reads or writes before `main`, as one range to read ahead
    /// (``ImageDescriptor/readAhead(_:)``): from the header (the plan check reads it) to the
    /// end of the last writable segment's file bytes (where fixups go). `__LINKEDIT` after
    /// them is never read by a closure launch; segments marked `deferred` (page-in) are left
    /// to their faults. Just the header's page when nothing writable has file bytes; nil when
    /// no segment has any.
    package func readAheadRange(deferred: [Bool]? = nil) -> Range<UInt64>? {
        let fileBacked = segments.filter { $0.fileSize > 0 }
        guard let start = fileBacked.map(\.fileOffset).min() else { return nil }
        var end = start &+ LaunchMemory.pageSize
        for (position, segment) in segments.enumerated() where segment.fileSize > 0 && segment.isWritable {
            guard deferred?[position] != true else { continue }
            let (segmentEnd, overflow) = segment.fileOffset.addingReportingOverflow(segment.fileSize)
            if !overflow { end = max(end, segmentEnd) }
        }
        return start < end ? start..<end : nil
    }
}
