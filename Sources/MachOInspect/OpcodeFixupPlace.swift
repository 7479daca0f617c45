import MachOReader

/// The segment name, section name and address llvm-objdump shows for a dyld-info opcode
/// fixup, worked out as llvm's BindRebaseSegInfo does: a segment offset is measured from the
/// segment's first section, and the section is the one of that segment that holds the result.
/// (For the segments linkers write, the first section starts the segment, so the address is
/// also the real one.)
struct OpcodeFixupPlace {
    let segmentName: String
    let sectionName: String
    let address: UInt64

    init(_ location: FixupLocation, in image: MachOImage) throws(MachOError) {
        let segment = image.segments[location.segmentIndex]
        guard let first = segment.sections.first else {
            throw MachOError.malformed(
                "fixup at segment \(segment.name) offset 0x\(String(location.segmentOffset, radix: 16)) is not in a section",
                at: image.view.base)
        }
        let address = first.address &+ location.segmentOffset
        guard let section = segment.sections.first(where: { $0.contains(address: address) }) else {
            throw MachOError.malformed(
                "fixup at \(segment.name) address 0x\(String(address, radix: 16)) is not in a section",
                at: image.view.base)
        }
        segmentName = section.segmentName
        sectionName = section.name
        self.address = address
    }
}
