/// An image's header and segment commands alone, read from its first bytes (the header
/// and load commands that open `__TEXT`): what a loader checks a mapping plan against
/// without reading the rest of the file. No linkedit, no fixups, no symbols.
package struct SegmentTable: Sendable {
    package let header: MachHeader
    /// The `LC_SEGMENT_64` commands, in load-command order, without their sections.
    package let segments: [Segment]

    /// Bytes of the image the header and load commands take, from the header alone
    /// (`view` needs only its first 32 bytes).
    package static func requiredSize(header view: ByteView) throws(MachOError) -> Int {
        let header = try MachHeader(parsing: view)
        return MachHeader.size + Int(header.commandsSize)
    }

    /// Parses the header and walks every load command of `view`, keeping the segments.
    package init(parsing view: ByteView) throws(MachOError) {
        header = try MachHeader(parsingWithCommands: view)
        let commandsEnd = MachHeader.size + Int(header.commandsSize)
        var segments: [Segment] = []
        var offset = MachHeader.size
        for _ in 0..<header.commandCount {
            let type = LoadCommandType(rawValue: try view.u32(offset))
            let size = Int(try view.u32(offset + 4))
            guard size >= 8, size % 4 == 0, offset + size <= commandsEnd else {
                throw MachOError.malformed("load command at offset \(offset) has size \(size)", at: view.absolute(offset + 4))
            }
            if type == .segment64 { segments.append(try Segment(parsing: try view.slice(offset, size), withSections: false)) }
            offset += size
        }
        self.segments = segments
    }
}
