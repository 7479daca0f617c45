/// Where the fields of a segment command and its sections are: LC_SEGMENT_64 with
/// `section_64`, or LC_SEGMENT with 32-bit `section` (which llvm-objdump also checks when
/// one turns up in a 64-bit image).
struct SegmentFieldLayout {
    let commandSize: Int, sectionSize: Int, wordSize: Int

    static let bits64 = SegmentFieldLayout(commandSize: 72, sectionSize: 80, wordSize: 8)
    static let bits32 = SegmentFieldLayout(commandSize: 56, sectionSize: 68, wordSize: 4)

    func word(_ view: ByteView, _ offset: Int) throws(MachOError) -> UInt64 {
        wordSize == 8 ? try view.u64(offset) : UInt64(try view.u32(offset))
    }
}

extension StructureCheck {
    /// LC_SEGMENT_64 (or LC_SEGMENT): the sections fit the command; each section's
    /// contents and relocations lie inside the file, past the headers, inside the segment
    /// and overlap nothing; the segment's file range lies inside the file and is no larger
    /// than its VM size.
    mutating func checkSegment(_ site: LoadCommandSite, layout fields: SegmentFieldLayout) throws(MachOError) {
        try size(site, atLeast: fields.commandSize)
        let view = site.view
        let w = fields.wordSize
        let vmAddress = try fields.word(view, 24)
        let vmSize = try fields.word(view, 24 + w)
        let fileOffset = try fields.word(view, 24 + 2 * w)
        let fileSize = try fields.word(view, 24 + 3 * w)
        let sectionCount = try view.u32(24 + 4 * w + 8)
        guard UInt64(sectionCount) * UInt64(fields.sectionSize) <= UInt64(view.count - fields.commandSize) else {
            throw site.error("cmdsize \(view.count) cannot hold \(sectionCount) sections", field: 24 + 4 * w + 8)
        }
        let checksContents = header.fileType != .dylibStub && header.fileType != .dsym
        for index in 0..<Int(sectionCount) {
            let start = fields.commandSize + index * fields.sectionSize
            let section = try view.slice(start, fields.sectionSize)
            let address = try fields.word(section, 32)
            let size = try fields.word(section, 32 + w)
            let offset = UInt64(try section.u32(32 + 2 * w))
            let relocationOffset = UInt64(try section.u32(32 + 2 * w + 8))
            let relocationCount = UInt64(try section.u32(32 + 2 * w + 12))
            let flags = try section.u32(32 + 2 * w + 16)
            let what = "section \(index) (\(try section.fixedString(16, 16)),\(try section.fixedString(0, 16)))"
            // LLVM compares the whole flags word, not only the section type.
            let hasContents = checksContents && flags != 0x1 && flags != 0x12
            let offsetField = start + 32 + 2 * w
            if hasContents {
                guard offset <= layout.fileSize else {
                    throw site.error("\(what) offset \(hex(offset)) extends past the end of the file", field: offsetField)
                }
                if fileOffset == 0 && offset < layout.elements[0].size && size != 0 {
                    throw site.error("\(what) offset \(hex(offset)) is inside the headers", field: offsetField)
                }
                try layout.checkInside(offset: offset, size: size, fields: ("\(what) offset", "size"), at: site, fieldOffset: offsetField)
                guard size <= fileSize else {
                    throw site.error("\(what) size \(hex(size)) is larger than the segment's filesize", field: start + 32 + w)
                }
            }
            if checksContents && size != 0 && address < vmAddress {
                throw site.error("\(what) addr \(hex(address)) is below the segment's vmaddr", field: start + 32)
            }
            // LLVM adds these without an overflow check; so does this comparison.
            if vmSize != 0 && size != 0 && address &+ size > vmAddress &+ vmSize {
                throw site.error("\(what) addr plus size is past the segment's vmaddr plus vmsize", field: start + 32)
            }
            if hasContents {
                try layout.claimWithoutBoundsCheck(offset: offset, size: size, name: "\(what) contents", at: site, fieldOffset: offsetField)
            }
            try layout.claim(
                offset: relocationOffset, size: relocationCount * 8, name: "\(what) relocation entries",
                fields: ("\(what) reloff", "nreloc times 8"), at: site, fieldOffset: offsetField + 8)
        }
        try layout.checkInside(offset: fileOffset, size: fileSize, fields: ("fileoff", "filesize"), at: site, fieldOffset: 24 + 2 * w)
        if vmSize != 0 && fileSize > vmSize {
            throw site.error("filesize \(hex(fileSize)) is larger than vmsize \(hex(vmSize))", field: 24 + 3 * w)
        }
    }
}
