import LaunchPlan
import LoaderSystem
import MachOReader

/// Stores fixups into one mapped image, each checked to lie in one of its writable segments
/// (ranges taken from the plan once per image): the slow path writes through it fixup by
/// fixup, the fast path run by run (``accept(_:)``, then ``store(_:at:in:)``).
package struct ImageWriter: Sendable {
    /// Where the image's preferred base was mapped.
    package let base: UInt64
    /// Where fixups may be stored.
    @usableFromInline let writable: WritableRanges
    @usableFromInline let path: String

    init(_ image: LaunchMemory.Image) {
        base = image.base
        writable = WritableRanges(image.plan)
        path = image.plan.path
    }

    /// Writes the 64-bit word at `vmOffset` from the image's base, when the 8 bytes lie inside
    /// one writable segment. Inlinable: the slow path calls it for every fixup.
    @inlinable
    package func store(_ value: UInt64, vmOffset: UInt64) throws(LoadError) {
        if writable.accepts(vmOffset) {
            UnsafeMemory.store64(value, at: base &+ vmOffset)
            return
        }
        throw .mapping(image: path, reason: "fixup at offset \(hex(vmOffset)) is outside every writable segment")
    }

    /// Whether a run of 8-byte locations from `start` to `last` (offsets from the image's
    /// base) lies inside one writable segment: the fast path's one check per run.
    @inlinable
    package func accepts(start: UInt64, last: UInt64) -> Bool {
        writable.accepts(start: start, last: last)
    }

    /// Why ``accept(_:)`` refuses `run`.
    package func fault(_ run: FixupRun) -> FixupFault {
        writable.fault(run)
    }

    /// `run`, to store into with ``store(_:at:in:)``, when it lies inside one writable segment
    /// and holds no more locations than it has room for (``WritableRanges/accepts(_:)``): the
    /// fast path's one check per run.
    @inlinable
    package func accept(_ run: FixupRun) -> AcceptedRun? {
        writable.accepts(run) ? AcceptedRun(run: run, base: base) : nil
    }

    /// Writes `value` at `location` (from the image's base) of a run ``accept(_:)`` gave:
    /// checked against the run's bounds, no segment search.
    @inlinable
    package func store(_ value: UInt64, at location: UInt64, in accepted: AcceptedRun) {
        precondition(accepted.base == base && location >= accepted.run.start && location <= accepted.run.last,
                     "store outside its accepted run")
        UnsafeMemory.store64(value, at: base &+ location)
    }
}

/// A run that an ``ImageWriter`` accepted: only the writer makes one.
package struct AcceptedRun: Sendable {
    package let run: FixupRun
    /// The base of the image whose writer accepted it.
    @usableFromInline let base: UInt64
    @usableFromInline init(run: FixupRun, base: UInt64) {
        self.run = run
        self.base = base
    }
}

extension LaunchMemory {
    /// A writer for image `index`'s fixups.
    package func writer(image index: Int) -> ImageWriter {
        ImageWriter(images[index])
    }
}

/// A writer bounds the walk of a run stream (``FixupRunWalk``).
extension ImageWriter: FixupRunBounds {}
