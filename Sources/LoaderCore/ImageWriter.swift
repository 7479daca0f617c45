/// Stores fixups into one mapped image, each checked to lie in one of the image's writable
/// segments: the check ``LaunchMemory/store(_:image:vmOffset:)`` makes, against ranges
/// taken from the plan once per image instead of the plan's segments on every store. What
/// the slow path writes through, fixup by fixup.
public struct ImageWriter {
    /// Where the image's preferred base was mapped.
    public let base: UInt64
    /// Per writable segment of at least 8 bytes: its vm offset, and the largest distance
    /// from it at which an 8-byte store still ends inside the segment.
    @usableFromInline let writable: [(start: UInt64, lastStore: UInt64)]
    @usableFromInline let path: String

    init(_ image: LaunchMemory.Image) {
        base = image.base
        writable = image.plan.segments.compactMap { segment in
            segment.isWritable && segment.vmSize >= 8 ? (segment.vmOffset, segment.vmSize - 8) : nil
        }
        path = image.plan.path
    }

    /// Writes the 64-bit word at `vmOffset` from the image's base, when the 8 bytes lie
    /// inside one writable segment. Inlinable: the slow path calls it for every fixup.
    @inlinable
    public func store(_ value: UInt64, vmOffset: UInt64) throws(LoadError) {
        for range in writable where vmOffset >= range.start && vmOffset - range.start <= range.lastStore {
            UnsafeMemory.store64(value, at: base &+ vmOffset)
            return
        }
        throw .mapping(image: path, reason: "fixup at offset 0x\(String(vmOffset, radix: 16)) is outside every writable segment")
    }
}

extension LaunchMemory {
    /// A writer for image `index`'s fixups.
    public func writer(image index: Int) -> ImageWriter {
        ImageWriter(images[index])
    }
}
