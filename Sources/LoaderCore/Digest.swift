import LaunchPlan

extension LaunchMemory {
    /// xxh3-64 over every writable segment, in image and segment order, with each aligned
    /// 64-bit word that points into the launch's region rewritten relative to the region:
    /// two launches at different slides that wrote the same fixups give the same digest.
    public func writableDigest() -> UInt64 {
        var bytes: [UInt8] = []
        for image in images {
            for segment in image.plan.segments where segment.isWritable {
                bytes += UnsafeMemory.copyRelativizingPointers(
                    address: image.base + segment.vmOffset, size: segment.vmSize, regionBase: regionBase, regionSize: regionSize)
            }
        }
        return UnsafeHash.xxh3(bytes)
    }
}

extension LaunchMemory {
    /// A copy of one writable segment after fixups.
    public struct SegmentSnapshot: Sendable {
        public let image: Int
        public let segment: String
        /// Offset of the segment from the image's preferred base.
        public let vmOffset: UInt64
        public let bytes: [UInt8]
    }

    /// Copies of every writable segment, in image and segment order (for `compare`).
    public func writableSnapshot() -> [SegmentSnapshot] {
        images.enumerated().flatMap { index, image in
            image.plan.segments.filter(\.isWritable).map { segment in
                SegmentSnapshot(image: index, segment: segment.name, vmOffset: segment.vmOffset,
                                bytes: UnsafeMemory.copy(address: image.base + segment.vmOffset, size: segment.vmSize))
            }
        }
    }
}

/// When a launch takes its memory's digest (``LaunchMemory/writableDigest()``): after the
/// fixups and before anything runs, the time excluded from the launch's, or, when no code
/// will run, once the launch is timed. Reading every writable page and copying it faults in
/// pages no fixup touched and evicts the caches: taken inside the timed launch, even
/// excluded, it would slow the protections and bookkeeping that follow.
public enum LaunchDigest: Sendable {
    case beforeCode, afterLaunch, none

    /// `beforeCode` when `request` runs the app's code, else `afterLaunch`.
    public init(_ request: LaunchOptions) {
        self = request.run ? .beforeCode : .afterLaunch
    }
}
