import MachOReader

/// The first of a list of half-open ranges `[start, start + size)` that holds a value, as
/// a linear `first(where:)` over the list finds it, at the cost of a binary search (or
/// none, when the value falls in the range found last: fixups mostly come in address order).
///
/// When the ranges are sorted and disjoint, the range holding a value is the only one, so
/// the search gives `first(where:)`'s answer; otherwise (overlapping or unordered sections,
/// only in odd files) the lookup is the linear scan itself.
struct RangeLookup {
    private let starts: [UInt64], sizes: [UInt64], sortedAndDisjoint: Bool
    /// The index found last.
    private var hint = 0

    init(_ ranges: [(start: UInt64, size: UInt64)]) {
        starts = ranges.map(\.start)
        sizes = ranges.map(\.size)
        sortedAndDisjoint = zip(ranges, ranges.dropFirst()).allSatisfy { previous, next in
            let (previousEnd, overflow) = previous.start.addingReportingOverflow(previous.size)
            return !overflow && previousEnd <= next.start
        }
    }

    private func holds(_ index: Int, _ value: UInt64) -> Bool {
        value >= starts[index] && value - starts[index] < sizes[index]
    }

    /// The index of the first range holding `value`, or nil.
    mutating func index(of value: UInt64) -> Int? {
        guard !starts.isEmpty else { return nil }
        guard sortedAndDisjoint else { return starts.indices.first { holds($0, value) } }
        if holds(hint, value) { return hint }
        // The last range starting at or below `value`.
        let after = starts.partitionPoint { $0 <= value }
        guard after > 0, holds(after - 1, value) else { return nil }
        hint = after - 1
        return hint
    }
}

/// The segment name, section name and address llvm-objdump shows for a fixup given as a
/// segment number and offset, worked out as llvm's BindRebaseSegInfo does: the offset is
/// measured from the address of the segment's first section, and the section is the first
/// of that segment whose offsets from there hold it. (For the segments linkers write, the
/// first section starts the segment, so the address is also the real one.) Built once per
/// table; each lookup is a binary search at most.
struct FixupPlaces {
    /// Where a fixup is.
    struct Place {
        let segmentName: String, sectionName: String, address: UInt64

        /// The segment, section and address columns llvm-objdump's rebase and bind tables
        /// open each row with, and the space after them.
        func write(to text: inout TextBuffer) {
            text.column(segmentName, 8)
            text.padded(sectionName, 18)
            text.write(" 0x")
            text.hex(address, width: 8)
            text.write(" ")
        }
    }

    /// Per segment: its name (for errors), the address of its first section (nil without
    /// sections), its sections' segment and section names, and the lookup over their offsets
    /// from that address.
    private let segmentNames: [String], starts: [UInt64?]
    private let names: [[(segment: String, section: String)]]
    private var lookups: [RangeLookup]

    /// Segments numbered as the load commands number them (as dyld-info opcodes do).
    init(segmentsOf image: MachOImage) {
        self.init(image.segments.map { ($0.name, $0.sections) })
    }

    /// Segments numbered as llvm numbers them for chained fixups: a segment is a run of
    /// consecutive sections with one segment name, and the numbering starts from 1 (number 0
    /// empty) when the image has a `__PAGEZERO`.
    init(sectionRunsOf image: MachOImage) {
        var runs: [(name: String, sections: [Section])] = image.segments.contains { $0.name == "__PAGEZERO" } ? [("", [])] : []
        var previous: String?
        for section in image.sections {
            if section.segmentName != previous { runs.append((section.segmentName, [])) }
            runs[runs.count - 1].sections.append(section)
            previous = section.segmentName
        }
        self.init(runs)
    }

    private init(_ segments: [(name: String, sections: [Section])]) {
        segmentNames = segments.map(\.name)
        starts = segments.map { $0.sections.first?.address }
        names = segments.map { $0.sections.map { ($0.segmentName, $0.name) } }
        lookups = segments.map { segment in
            let start = segment.sections.first?.address ?? 0
            return RangeLookup(segment.sections.map { (start: $0.address &- start, size: $0.size) })
        }
    }

    /// The place of `offset` in segment `segmentIndex`, or nil when no section holds it.
    mutating func locate(segmentIndex: Int, offset: UInt64) -> Place? {
        guard segmentIndex >= 0, segmentIndex < lookups.count, let start = starts[segmentIndex],
              let index = lookups[segmentIndex].index(of: offset) else { return nil }
        let name = names[segmentIndex][index]
        return Place(segmentName: name.segment, sectionName: name.section, address: start &+ offset)
    }

    /// The place of an opcode fixup's location, which a section must hold.
    mutating func place(of location: FixupLocation, in image: MachOImage) throws(MachOError) -> Place {
        guard let start = starts[location.segmentIndex] else {
            throw MachOError.malformed(
                "fixup at segment \(segmentNames[location.segmentIndex]) offset \(hex(location.segmentOffset)) is not in a section",
                at: image.view.base)
        }
        guard let place = locate(segmentIndex: location.segmentIndex, offset: location.segmentOffset) else {
            throw MachOError.malformed(
                "fixup at \(segmentNames[location.segmentIndex]) address \(hex(start &+ location.segmentOffset)) is not in a section",
                at: image.view.base)
        }
        return place
    }
}
