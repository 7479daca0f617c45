/// Walks every chain of an image one pointer at a time: what a loader's fixup loop pulls
/// from, with no closure per pointer. Visits the pointers in segment, page and chain order
/// and makes the checks ``ChainedFixupChains/forEachPointer(in:_:)`` documents (which is
/// built on it), failing with the same errors at the same points.
package struct ChainedPointerCursor {
    @usableFromInline let chains: ChainedFixupChains, segments: [Segment], imageView: ByteView
    @usableFromInline let importCount: Int
    /// Index in `chains.segments` of the segment being walked (-1 before the first).
    @usableFromInline var slot = -1
    /// The segment being walked: its starts, name, file data and what each pointer needs.
    @usableFromInline var starts: ChainedStartsInSegment?
    @usableFromInline var segmentName = ""
    @usableFromInline var segmentIndex = 0
    @usableFromInline var data: ByteView
    @usableFromInline var segmentAddress: UInt64 = 0
    @usableFromInline var format = ChainedPointerFormat.pointer64
    @usableFromInline var pageSize = 0
    @usableFromInline var maxValidPointer: UInt32 = 0
    /// The page being walked (-1 before the segment's first).
    @usableFromInline var page = -1
    /// The next entry of the page's multi-start list, -1 when none is left.
    @usableFromInline var nextStartEntry = -1
    /// Where the page's previous chain ended: a chain only moves forward, so a start past it
    /// visits no location twice.
    @usableFromInline var previousEnd: Int?
    /// Offset in the page of the chain's next pointer, nil between chains.
    @usableFromInline var chainOffset: Int?
    /// A chain that continues outside its page fails after its last good pointer was handed out.
    @usableFromInline var pendingError: MachOError?

    /// A cursor over every chain of `image`, whose LC_DYLD_CHAINED_FIXUPS blob is `chains`.
    package init(_ chains: ChainedFixupChains, in image: MachOImage) {
        self.chains = chains
        segments = image.segments
        imageView = image.view
        importCount = chains.importTable.count
        data = chains.blob  // replaced by each segment's data (a placeholder that allocates nothing)
    }

    /// The next pointer, or nil after the last. Inlinable, with ``pointer(at:)``, so that a
    /// loader's loop over the pointers makes no call per pointer.
    @inlinable
    package mutating func next() throws(MachOError) -> ChainedPointerSite? {
        if let pendingError { throw pendingError }
        while true {
            if let offsetInPage = chainOffset { return try pointer(at: offsetInPage) }
            guard try beginChain() else { return nil }
        }
    }

    /// Decodes the pointer at `offsetInPage` of the current page and moves along its chain.
    @inlinable @inline(__always)
    mutating func pointer(at offsetInPage: Int) throws(MachOError) -> ChainedPointerSite {
        let offset = page * pageSize + offsetInPage
        guard offset <= data.count - format.pointerSize else {
            throw MachOError.malformed(
                "chained fixup at offset \(hex(offset)) of segment \(segmentName) is past its file data",
                at: data.absolute(min(offset, data.count)))
        }
        // Checked just above: the pointer's bytes lie inside the segment's data.
        let raw = format.pointerSize == 8 ? data.uncheckedU64(offset) : UInt64(data.uncheckedU32(offset))
        let (pointer, next) = format.decode(raw, maxValidPointer: maxValidPointer)
        if case let .bind(bind) = pointer, bind.importOrdinal >= importCount {
            throw MachOError.malformed(
                "chained bind uses import ordinal \(bind.importOrdinal) but there are \(importCount) imports",
                at: data.absolute(offset))
        }
        if next == 0 {
            previousEnd = offsetInPage
            chainOffset = nil
        } else {
            let following = offsetInPage + Int(next) * format.stride
            if following < pageSize {
                chainOffset = following
            } else {
                pendingError = MachOError.malformed(
                    "chain continues \(Int(next) * format.stride) bytes on, outside its \(pageSize)-byte page",
                    at: data.absolute(offset))
                chainOffset = nil
            }
        }
        return ChainedPointerSite(
            segmentIndex: segmentIndex, offsetInSegment: UInt64(offset),
            address: segmentAddress &+ UInt64(offset), fileOffset: data.absolute(offset),
            rawValue: raw, format: format, pointer: pointer)
    }

    /// Finds the next chain start (of this page, a later page or a later segment) and
    /// checks it; false when every chain has been walked.
    @usableFromInline
    mutating func beginChain() throws(MachOError) -> Bool {
        while true {
            guard let starts else {
                guard try beginSegment() else { return false }
                continue
            }
            let start: UInt16, entry: Int
            if nextStartEntry >= 0 {
                let value = try starts.chainStartEntry(nextStartEntry)
                (start, entry) = (value & ~ChainedStartsInSegment.startLast, nextStartEntry)
                nextStartEntry = value & ChainedStartsInSegment.startLast != 0 ? -1 : nextStartEntry + 1
            } else {
                page += 1
                previousEnd = nil
                guard page < starts.pageCount else {
                    self.starts = nil
                    continue
                }
                let first = starts.pageStarts[page]
                if first == ChainedStartsInSegment.startNone { continue }
                if first & ChainedStartsInSegment.startMulti != 0 {
                    nextStartEntry = Int(first & ~ChainedStartsInSegment.startMulti)
                    continue
                }
                (start, entry) = (first, page)
            }
            guard Int(start) < pageSize else {
                throw MachOError.malformed(
                    "chain start \(start) of page \(page) of segment \(segmentName) is outside its \(pageSize)-byte page",
                    at: starts.absoluteOffset(ofStartEntry: entry))
            }
            if let previousEnd, Int(start) <= previousEnd {
                throw MachOError.malformed(
                    "chain start \(hex(start)) of page \(page) of segment \(segmentName) is not past "
                        + "the end of the page's previous chain (\(hex(previousEnd))): its locations would be fixed up again",
                    at: starts.absoluteOffset(ofStartEntry: entry))
            }
            chainOffset = Int(start)
            return true
        }
    }

    /// Moves to the next segment with fixups; false after the last.
    mutating func beginSegment() throws(MachOError) -> Bool {
        slot += 1
        guard slot < chains.segments.count else { return false }
        let next = chains.segments[slot]
        guard next.segmentIndex < segments.count else {
            throw MachOError.malformed(
                "chained starts describe segment \(next.segmentIndex) but the image has \(segments.count) segments",
                at: chains.blob.absolute(Int(chains.header.startsOffset) + 4 + 4 * next.segmentIndex))
        }
        let segment = segments[next.segmentIndex]
        data = try imageView.slice(offset: segment.fileOffset, size: segment.fileSize)
        starts = next
        segmentName = segment.name
        segmentIndex = next.segmentIndex
        segmentAddress = segment.vmAddress
        format = next.pointerFormat
        pageSize = Int(next.pageSize)
        maxValidPointer = next.maxValidPointer
        page = -1
        nextStartEntry = -1
        return true
    }
}
