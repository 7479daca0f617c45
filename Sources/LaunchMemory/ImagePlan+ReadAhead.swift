import LaunchPlan

extension ImagePlan {
    /// The file bytes a launch reads or writes before `main`, as one range for the kernel to
    /// read ahead (``ImageDescriptor/readAhead(_:)``): from the image's first file byte (its
    /// header, which the plan check reads) to the end of the last writable segment's file
    /// bytes (the pages fixups are written to); the code between is what `main` runs.
    /// `__LINKEDIT` after them is never read by a closure launch, and the segments marked in
    /// `deferred` (page-in linking) are left to their faults. Just the header's page when
    /// nothing writable is mapped from the file; nil when no segment has file bytes.
    public func readAheadRange(deferred: [Bool]? = nil) -> Range<UInt64>? {
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
