import MachOReader
import LaunchMemory

/// The mark of an image written by `dyld3 stub-root` (docs/stub-roots.md): a
/// `__DATA,__stub_root` section. Such an image holds no code (its exports are zero data), so a
/// launch that loaded one maps it and writes its fixups but never runs code: initializers
/// of real images would call into the stubs.
package enum StubImageMarker {
    package static let segmentName = "__DATA"
    package static let sectionName = "__stub_root"

    /// Whether `section` is the marker section.
    package static func isMarker(_ section: Section) -> Bool {
        section.segmentName == segmentName && section.name == sectionName
    }

    /// Whether the image whose header and load commands open `view` carries the marker (load
    /// commands bounded by `sizeofcmds`; sections read only of `__DATA`).
    package static func isCarried(byHeaderAndCommands view: ByteView) throws(MachOError) -> Bool {
        let header = try MachHeader(parsing: view)
        guard header.commandCount <= MachOImage.maxLoadCommands else {
            throw MachOError.malformed("header claims \(header.commandCount) load commands", at: view.absolute(16))
        }
        let commandsEnd = MachHeader.size + Int(header.commandsSize)
        try view.check(MachHeader.size, Int(header.commandsSize))
        var offset = MachHeader.size
        for _ in 0..<header.commandCount {
            let type = LoadCommandType(rawValue: try view.u32(offset))
            let size = Int(try view.u32(offset + 4))
            guard size >= 8, offset + size <= commandsEnd else {
                throw MachOError.malformed("load command at offset \(offset) has size \(size)", at: view.absolute(offset + 4))
            }
            if type == .segment64, size >= Segment.commandSize, try view.fixedString(offset + 8, 16, is: segmentName) {
                // Each section_64: sectname[16], then segname[16].
                let count = Int(try view.u32(offset + 64))
                guard count <= (size - Segment.commandSize) / Section.size else {
                    throw MachOError.malformed("segment command at offset \(offset) cannot hold \(count) sections", at: view.absolute(offset + 64))
                }
                for section in 0..<count {
                    let start = offset + Segment.commandSize + section * Section.size
                    if try view.fixedString(start, 16, is: sectionName), try view.fixedString(start + 16, 16, is: segmentName) { return true }
                }
            }
            offset += size
        }
        return false
    }

    /// The first image of `memory` that carries the marker, read back from its mapped header;
    /// one that cannot be read back is not taken for a stub (both paths checked it already).
    package static func firstMarkedImage(in memory: LaunchMemory) -> Int? {
        for index in memory.images.indices {
            guard let first = memory.mappedFileBytes(image: index, vmOffset: 0, count: MachHeader.size),
                  let size = try? SegmentTable.requiredSize(header: ByteView(first)),
                  let bytes = memory.mappedFileBytes(image: index, vmOffset: 0, count: size) else { continue }
            if (try? isCarried(byHeaderAndCommands: ByteView(bytes))) == true { return index }
        }
        return nil
    }
}
