/// Where a dyld-info rebase or bind writes: a segment, named by its index among the
/// image's `LC_SEGMENT_64` commands (dyld's segment index), and an offset inside it.
package struct FixupLocation: Hashable, Sendable {
    /// Index into ``MachOImage/segments``.
    package let segmentIndex: Int
    /// Offset of the fixed-up bytes from the segment's start.
    package let segmentOffset: UInt64
    /// The unslid virtual address of the fixed-up bytes (segment vmaddr + offset).
    package let address: UInt64
}

/// Checks the places an opcode stream names against the image's segments and bounds the
/// total work a stream can ask for.
///
/// A fixup must lie wholly inside its segment's VM range (dyld's rule) and inside the
/// bytes the file supplies for that segment: opcode-based linkers only fix up initialized
/// data. Each fixup therefore covers at least four file bytes of its own, so a stream that
/// produces more fixups than the image has four-byte words revisits locations and is
/// rejected; that caps the work of any stream at the size of the image.
struct FixupLocationChecker: Sendable {
    /// Bytes written by one fixup of a 64-bit image.
    static let pointerSize: UInt64 = 8

    private let segments: [Segment]
    /// Each segment's vmaddr, so that a fixup's location copies no `Segment`.
    private let segmentAddresses: [UInt64], imageSize: Int
    private var budget: Int

    init(_ image: MachOImage) {
        segments = image.segments
        segmentAddresses = image.segments.map(\.vmAddress)
        imageSize = image.view.count
        budget = image.view.count / 4
    }

    /// Validates `count` fixups starting at `offset` in segment `segmentIndex`, `stride`
    /// bytes apart, and charges them to the stream's budget.
    /// `opcodeOffset` is the absolute file offset of the opcode asking for them.
    mutating func check(
        segmentIndex: Int?, offset: UInt64, count: UInt64, stride: UInt64, opcodeOffset: Int, opcode: String
    ) throws(MachOError) {
        guard let segmentIndex else { throw MachOError.malformed("\(opcode) before any SET_SEGMENT_AND_OFFSET_ULEB", at: opcodeOffset) }
        try checkSegmentIndex(segmentIndex, opcodeOffset: opcodeOffset, opcode: opcode)
        guard count > 0 else { return }
        guard count <= UInt64(budget) else {
            throw MachOError.malformed("\(opcode) asks for \(count) fixups, more than the image has room for", at: opcodeOffset)
        }
        let segment = segments[segmentIndex]
        // Offset of the last fixup's end: offset + (count - 1) * stride + pointerSize.
        let (span, spanOverflow) = (count - 1).multipliedReportingOverflow(by: stride)
        let (last, lastOverflow) = offset.addingReportingOverflow(span)
        let (end, endOverflow) = last.addingReportingOverflow(FixupLocationChecker.pointerSize)
        // Built only for an error: this check runs once per DO_* opcode.
        func run() -> String { "\(opcode) at segment \(segment.name) offset \(hex(offset)) (\(count) fixups, stride \(stride))" }
        if spanOverflow || lastOverflow || endOverflow || end > segment.vmSize {
            throw MachOError.malformed("\(run()) runs past the segment's vmsize \(hex(segment.vmSize))", at: opcodeOffset)
        }
        let available = segment.fileOffset < UInt64(imageSize) ? UInt64(imageSize) - segment.fileOffset : 0
        if end > min(segment.fileSize, available) {
            throw MachOError.malformed("\(run()) reaches past the segment's bytes in the file", at: opcodeOffset)
        }
        budget -= Int(count)
    }

    /// Validates a run of `count` fixups each `skip` bytes past the end of the previous one
    /// (DO_*_TIMES, *_ADD_ADDR, *_SKIPPING opcodes) and returns the stride between them.
    mutating func checkRun(
        segmentIndex: Int?, offset: UInt64, count: UInt64, skip: UInt64, opcodeOffset: Int, opcode: String
    ) throws(MachOError) -> UInt64 {
        let (step, overflow) = skip.addingReportingOverflow(FixupLocationChecker.pointerSize)
        if overflow, count > 1 { throw MachOError.malformed("\(opcode) skips \(hex(skip)) bytes, past any segment", at: opcodeOffset) }
        try check(segmentIndex: segmentIndex, offset: offset, count: count, stride: step, opcodeOffset: opcodeOffset, opcode: opcode)
        return step
    }

    /// Fails unless the image has a segment `segmentIndex` (checked as soon as a stream sets
    /// one, as dyld does).
    func checkSegmentIndex(_ segmentIndex: Int, opcodeOffset: Int, opcode: String) throws(MachOError) {
        guard segmentIndex < segments.count else {
            throw MachOError.malformed(
                "\(opcode) names segment index \(segmentIndex), but the image has \(segments.count) segments",
                at: opcodeOffset)
        }
    }

    /// The location of a fixup already validated by ``check(segmentIndex:offset:count:stride:opcodeOffset:opcode:)``.
    func location(segmentIndex: Int, offset: UInt64, opcodeOffset: Int) throws(MachOError) -> FixupLocation {
        let (address, overflow) = segmentAddresses[segmentIndex].addingReportingOverflow(offset)
        guard !overflow else {
            throw MachOError.malformed("fixup address in segment \(segments[segmentIndex].name) overflows the address space", at: opcodeOffset)
        }
        return FixupLocation(segmentIndex: segmentIndex, segmentOffset: offset, address: address)
    }

}

/// What the rebase and bind opcode decoders share: the stream's cursor, the segment and
/// offset its opcodes set, and the run of fixups its last DO opcode queued.
struct OpcodeStream: Sendable {
    var cursor: ByteCursor
    private var checker: FixupLocationChecker, segmentIndex: Int?
    var segmentOffset: UInt64 = 0
    /// Fixups still owed by the last DO opcode, `stride` bytes apart.
    private(set) var pendingCount: UInt64 = 0
    private var stride: UInt64 = 0
    /// The offset of the opcode that queued them.
    private(set) var pendingOpcodeOffset = 0
    var finished = false

    init(_ opcodes: ByteView, image: MachOImage) {
        cursor = ByteCursor(opcodes)
        checker = FixupLocationChecker(image)
    }

    /// The next opcode (the byte's high nibble), its immediate (the low nibble) and its
    /// offset; nil once the stream is finished or at its end.
    mutating func nextOpcode<Opcode: RawRepresentable<UInt8>>(
        _ stream: String
    ) throws(MachOError) -> (opcode: Opcode, immediate: UInt8, offset: Int)? {
        if finished || cursor.atEnd { return nil }
        let offset = cursor.absoluteOffset
        let byte = try cursor.u8()
        guard let opcode = Opcode(rawValue: byte & 0xf0) else {
            throw MachOError.malformed("unknown \(stream) opcode \(hex(byte & 0xf0))", at: offset)
        }
        return (opcode, byte & 0x0f, offset)
    }

    /// SET_SEGMENT_AND_OFFSET_ULEB: segment `index` (checked now, as dyld does) and the
    /// offset that follows the opcode.
    mutating func setSegment(_ index: UInt8, at opcodeOffset: Int, _ opcode: String) throws(MachOError) {
        try checker.checkSegmentIndex(Int(index), opcodeOffset: opcodeOffset, opcode: opcode)
        segmentIndex = Int(index)
        segmentOffset = try cursor.uleb128()
    }

    /// Queues `count` fixups from the current offset, each `skip` bytes past the end of the last.
    mutating func schedule(_ count: UInt64, skip: UInt64, at opcodeOffset: Int, _ opcode: String) throws(MachOError) {
        stride = try checker.checkRun(
            segmentIndex: segmentIndex, offset: segmentOffset, count: count, skip: skip,
            opcodeOffset: opcodeOffset, opcode: opcode)
        pendingCount = count
        pendingOpcodeOffset = opcodeOffset
    }

    /// The location of the next queued fixup (``schedule(_:skip:at:_:)`` validated it, so a
    /// segment is set).
    mutating func nextLocation() throws(MachOError) -> FixupLocation {
        let location = try checker.location(segmentIndex: segmentIndex ?? 0, offset: segmentOffset, opcodeOffset: pendingOpcodeOffset)
        segmentOffset &+= stride
        pendingCount -= 1
        return location
    }
}

extension MachOImage {
    /// The bytes of one dyld-info opcode stream (empty when the image has no LC_DYLD_INFO).
    func dyldInfoStream(_ stream: KeyPath<DyldInfo, LinkeditData>) throws(MachOError) -> ByteView {
        guard let range = dyldInfo?[keyPath: stream], range.dataSize != 0 else { return try view.slice(0, 0) }
        return try linkeditBytes(range)
    }
}
