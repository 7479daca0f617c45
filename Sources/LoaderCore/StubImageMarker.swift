import MachOReader
import LaunchMemory

/// The mark of an image written by `dyld3 stub-root` (docs/stub-roots.md): a
/// `__DATA,__stub_root` section, which every stub dylib and every stub host carries. Such an
/// image holds no code of the library it stands for (its exports are zero data, its entry
/// point one trapping instruction), so a launch that loaded one maps it and writes its
/// fixups but never runs code: initializers of real images would call into the stubs.
public enum StubImageMarker {
    public static let segmentName = "__DATA"
    public static let sectionName = "__stub_root"

    /// Whether `section` is the marker section.
    public static func isMarker(_ section: Section) -> Bool {
        section.segmentName == segmentName && section.name == sectionName
    }

    /// Whether the image whose header and load commands open `view` carries the marker.
    /// Walks the load commands once (their count and sizes bounded by the header's
    /// `sizeofcmds`), reading sections only of `__DATA` segment commands.
    public static func isCarried(byHeaderAndCommands view: ByteView) throws(MachOError) -> Bool {
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
            if type == .segment64, size >= Segment.commandSize, try view.fixedString(offset + 8, 16) == segmentName,
               try Segment(parsing: try view.slice(offset, size)).sections.contains(where: isMarker) {
                return true
            }
            offset += size
        }
        return false
    }

    /// The first image of `memory` (in load order) that carries the marker, read back from
    /// its mapped header and load commands; nil when none does. An image whose header cannot
    /// be read back is not taken for a stub (both launch paths have checked it already).
    public static func firstMarkedImage(in memory: LaunchMemory) -> Int? {
        for index in memory.images.indices {
            guard let first = memory.mappedFileBytes(image: index, vmOffset: 0, count: MachHeader.size),
                  let size = try? SegmentTable.requiredSize(header: ByteView(first)),
                  let bytes = memory.mappedFileBytes(image: index, vmOffset: 0, count: size) else { continue }
            if (try? isCarried(byHeaderAndCommands: ByteView(bytes))) == true { return index }
        }
        return nil
    }
}
