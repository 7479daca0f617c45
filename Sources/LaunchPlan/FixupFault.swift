import MachOReader

/// A rebase's target as a closure stores it: the offset in its own image in the low 56 bits,
/// the pointer's top byte (`high8`, such as a tagged C++ type-name pointer's bit 63) above.
/// The one definition of that layout.
package struct RebaseTarget: Equatable, Hashable, Sendable {
    package static let addressMask: UInt64 = 0x00ff_ffff_ffff_ffff
    /// The top byte, kept as it is when a pointer is slid.
    package static let high8Mask: UInt64 = 0xff00_0000_0000_0000
    package static let high8Shift: UInt64 = 56

    /// The packed word (what a rebase run entry delta-codes).
    package var bits: UInt64

    @inlinable
    package init(bits: UInt64) { self.bits = bits }

    @inlinable
    package init(offset: UInt64, high8: UInt8) {
        bits = (offset & Self.addressMask) | UInt64(high8) << Self.high8Shift
    }

    /// Offset of the target from its image's preferred base.
    @inlinable
    package var offset: UInt64 { bits & Self.addressMask }
    @inlinable
    package var high8: UInt8 { UInt8(truncatingIfNeeded: bits >> Self.high8Shift) }

    /// The pointer to store when the image's base is mapped at `imageBase`.
    @inlinable
    package func value(imageBase: UInt64) -> UInt64 {
        (imageBase &+ offset) | (bits & Self.high8Mask)
    }
}

/// One run of fixups: `count` 8-byte locations from `start`, `stride` bytes apart (offsets
/// from the image's base). Whoever made it checked that `last` = start + (count − 1) ×
/// stride does not overflow and that count is not 0.
package struct FixupRun: Equatable, Sendable {
    package let start: UInt64
    package let count: Int
    package let stride: UInt64
    package let last: UInt64

    @inlinable
    package init(start: UInt64, count: Int, stride: UInt64, last: UInt64) {
        self.start = start
        self.count = count
        self.stride = stride
        self.last = last
    }

    /// The run of `count` (≥ 1) locations `stride` apart from `start`, or nil when its last
    /// location overflows.
    @inlinable
    package init?(start: UInt64, count: Int, stride: UInt64) {
        guard count > 0 else { return nil }
        let (span, spanOverflow) = UInt64(count - 1).multipliedReportingOverflow(by: stride)
        let (last, lastOverflow) = start.addingReportingOverflow(span)
        guard !spanOverflow, !lastOverflow else { return nil }
        self.init(start: start, count: count, stride: stride, last: last)
    }
}

/// What is wrong with a fixup run stream or one of its fixups, as every consumer of the run
/// format reports it. Built without allocation (the page-in handler makes them), worded when read.
package enum FixupFault: Error, Equatable, Sendable, CustomStringConvertible {
    package enum Corruption: UInt8, Equatable, Sendable, CustomStringConvertible {
        case truncatedNumber, numberTooLarge, runCountTooLarge, entryCountTooLarge, emptyRun, runOverflows
        case bytesAfterLastRun, restartPastEnd

        package var description: String {
            switch self {
            case .truncatedNumber: "truncated number"
            case .numberTooLarge: "number too large"
            case .runCountTooLarge: "the run count is more than the stream holds"
            case .entryCountTooLarge: "the run's fixup count is more than the stream holds"
            case .emptyRun: "empty run"
            case .runOverflows: "run overflows the address space"
            case .bytesAfterLastRun: "bytes after the last run"
            case .restartPastEnd: "restart point past the end of the stream"
            }
        }
    }

    /// The stream does not decode at `byteOffset` (an offset in the closure body).
    case corrupt(byteOffset: Int, Corruption)
    /// A run whose 8-byte locations from `start` to `last` do not lie inside one writable
    /// segment of the image.
    case runOutsideSegments(start: UInt64, last: UInt64)
    /// A run inside one writable segment that holds more locations (`count`) than the
    /// segment has room for (`capacity`: one per 4 bytes of it); a stride of 0 repeats one
    /// location. Refused before its first entry is read.
    case runLongerThanSegment(start: UInt64, count: Int, capacity: UInt64)
    /// A run read from a page's restart point that does not lie on that page.
    case runOffPage(start: UInt64)
    /// A rebase whose target offset is not inside the image.
    case rebaseTargetOutsideImage(target: UInt64)
    /// A bind whose target index is not in the closure's bind-target table.
    case bindTargetPastTable(index: UInt64, tableSize: Int)
    /// The image's page index does not point `page` (a page number at the index's page
    /// size) at the runs that write it, or lists it when no run does.
    case pageIndexDisagrees(page: UInt64)

    package var description: String {
        switch self {
        case let .corrupt(offset, corruption): return "corrupt at offset \(hex(UInt64(offset))) (in the uncompressed body): \(corruption)"
        case let .runOutsideSegments(start, last): return "fixup run \(hex(start))-\(hex(last &+ 8)) is outside every writable segment"
        case let .runLongerThanSegment(start, count, capacity):
            return "fixup run at \(hex(start)) claims \(count) fixups, more than its segment has room for (\(capacity), one per 4 bytes)"
        case let .runOffPage(start): return "fixup run at +\(hex(start)) is not on the page"
        case let .rebaseTargetOutsideImage(target): return "rebase target \(hex(target)) is outside the image"
        case let .bindTargetPastTable(index, size): return "bind target index \(index) is past the table (\(size) entries)"
        case let .pageIndexDisagrees(page): return "the fixup page index disagrees with the runs at page \(page)"
        }
    }
}

/// Which run stream of an image a ``FixupFault`` is in: named in messages.
package enum FixupStream: String, Equatable, Sendable {
    case rebases = "rebase runs"
    case binds = "bind runs"
    case objcWrites = "Objective-C write runs"
    case pageIndex = "fixup page index"
}

/// What a walk accepts a run into before any of its entries: the check that every store of the
/// run lands where it may. `Accepted` is the run itself, or a writer's proof it may store there.
package protocol FixupRunBounds {
    associatedtype Accepted
    /// `run`, accepted; nil when refused (then ``fault(_:)`` says why).
    func accept(_ run: FixupRun) -> Accepted?
    func fault(_ run: FixupRun) -> FixupFault
}

/// Bounds that accept every run: for walks that read, whose runs the walks that store check.
package struct EveryRun: FixupRunBounds {
    @inlinable package init() {}
    @inlinable package func accept(_ run: FixupRun) -> FixupRun? { run }
    package func fault(_ run: FixupRun) -> FixupFault { .runOutsideSegments(start: run.start, last: run.last) }
}

extension WritableRanges: FixupRunBounds {
    @inlinable package func accept(_ run: FixupRun) -> FixupRun? { accepts(run) ? run : nil }
}

