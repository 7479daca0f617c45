/// Stores fixups into one mapped image, each checked to lie in one of the image's writable
/// segments: the check ``LaunchMemory/store(_:image:vmOffset:)`` makes, against ranges
/// taken from the plan once per image instead of the plan's segments on every store. What
/// the slow path writes through, fixup by fixup, and the fast path run by run.
public struct ImageWriter: Sendable {
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

    /// Fails unless a run of `count` 8-byte locations `stride` apart from `start` (offsets
    /// from the image's base), whose last location the caller computed without overflow as
    /// `last`, lies inside one writable segment. The fast path's one check per run: stores
    /// into the run (``storeInCheckedRun(_:at:)``) need no other.
    @inline(__always)
    public func checkRun(start: UInt64, last: UInt64) throws(LoadError) {
        if accepts(start: start, last: last) { return }
        throw .mapping(image: path, reason: "fixup run 0x\(String(start, radix: 16))-0x\(String(last &+ 8, radix: 16)) is outside every writable segment")
    }

    /// Whether ``checkRun(start:last:)`` accepts the run: no error built, for loops that
    /// leave the reporting to a checked pass.
    @inlinable
    public func accepts(start: UInt64, last: UInt64) -> Bool {
        for range in writable where start >= range.start && last - range.start <= range.lastStore {
            return true
        }
        return false
    }

    /// Stores a word at `address`, which must lie in a run ``checkRun(start:last:)`` accepted.
    @inline(__always)
    public func storeInCheckedRun(_ value: UInt64, at address: UInt64) {
        UnsafeMemory.store64(value, at: address)
    }
}

extension LaunchMemory {
    /// A writer for image `index`'s fixups.
    public func writer(image index: Int) -> ImageWriter {
        ImageWriter(images[index])
    }
}
