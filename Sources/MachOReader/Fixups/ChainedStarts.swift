/// `dyld_chained_starts_in_image`: one `seg_info_offset` per segment of the image, each
/// the offset (from this structure) of that segment's `dyld_chained_starts_in_segment`,
/// or 0 when the segment has no fixups.
package struct ChainedStartsInImage: Equatable, Sendable {
    /// `seg_info_offset[]`, indexed like the image's segments.
    package let segmentInfoOffsets: [UInt32]

    /// Parses the structure at the start of `view` (which runs to the end of the fixups blob).
    package init(parsing view: ByteView) throws(MachOError) {
        let count = try view.u32(0)
        // Bound the count by the bytes that could hold it before allocating.
        guard UInt64(count) * 4 <= UInt64(view.count - 4) else {
            throw MachOError.malformed("chained starts claim \(count) segments, more than the fixups blob holds", at: view.absolute(0))
        }
        segmentInfoOffsets = try (0..<Int(count)).map { (index) throws(MachOError) in try view.u32(4 + 4 * index) }
    }
}

/// `dyld_chained_starts_in_segment`: the pointer format of one segment's chains and, per
/// page, where the first fixup of the page's chain is.
package struct ChainedStartsInSegment: Sendable {
    /// `page_start[]` value of a page without fixups.
    package static let startNone: UInt16 = 0xFFFF
    /// `page_start[]` flag: the low 15 bits index a list of starts in the `chain_starts[]`
    /// overflow area that follows `page_start[]`.
    package static let startMulti: UInt16 = 0x8000
    /// `chain_starts[]` flag marking the last start of a page's list.
    package static let startLast: UInt16 = 0x8000
    /// Size of the fixed fields before `page_start[]`.
    package static let fixedSize = 22

    /// Index of the segment (in load-command order) these starts describe.
    package let segmentIndex: Int
    /// `seg_info_offset[segmentIndex]`: where this structure is, from the starts in image.
    package let infoOffset: UInt32
    /// `size`: bytes of this structure, overflow area included.
    package let size: UInt32
    /// `page_size`: 0x1000 or 0x4000.
    package let pageSize: UInt16, pointerFormat: ChainedPointerFormat
    /// `segment_offset`: the segment's vm offset from the image's preferred load address.
    package let segmentOffset: UInt64
    /// `max_valid_pointer`: for `DYLD_CHAINED_PTR_32`, larger rebase targets are values.
    package let maxValidPointer: UInt32
    /// `page_start[]`: one raw entry per page (offset in page, `startNone` or a multi index).
    package let pageStarts: [UInt16]

    /// The structure's own bytes (`size` of them), for the overflow area.
    private let view: ByteView

    /// `page_count`.
    package var pageCount: Int { pageStarts.count }

    /// Parses the structure at the start of `view`, which may run past its end.
    package init(parsing view: ByteView, segmentIndex: Int, infoOffset: UInt32) throws(MachOError) {
        try view.check(0, ChainedStartsInSegment.fixedSize)
        size = try view.u32(0)
        pageSize = try view.u16(4)
        let format = try view.u16(6)
        guard let pointerFormat = ChainedPointerFormat(rawValue: format) else {
            throw MachOError(offset: view.absolute(6), .unsupported("chained pointer format \(format)"))
        }
        self.pointerFormat = pointerFormat
        segmentOffset = try view.u64(8)
        maxValidPointer = try view.u32(16)
        let pageCount = Int(try view.u16(20))
        guard UInt64(ChainedStartsInSegment.fixedSize + 2 * pageCount) <= UInt64(size) else {
            throw MachOError.malformed(
                "chained starts of segment \(segmentIndex): \(pageCount) page starts do not fit in size \(size)",
                at: view.absolute(0))
        }
        let structure = try view.slice(offset: 0, size: UInt64(size))
        self.view = structure
        pageStarts = try (0..<pageCount).map { (page) throws(MachOError) in try structure.u16(ChainedStartsInSegment.fixedSize + 2 * page) }
        self.segmentIndex = segmentIndex
        self.infoOffset = infoOffset
    }

    /// The absolute file offset of entry `index` of `page_start[]` (overflow area included).
    package func absoluteOffset(ofStartEntry index: Int) -> Int {
        view.absolute(ChainedStartsInSegment.fixedSize + 2 * index)
    }

    /// Entry `index` of `page_start[]` and the `chain_starts[]` overflow area after it.
    func chainStartEntry(_ index: Int) throws(MachOError) -> UInt16 {
        try view.u16(ChainedStartsInSegment.fixedSize + 2 * index)
    }
}
