/// The byte ranges of one image's file that its load commands claim: the headers and
/// load commands, section contents, relocation entries, and every `__LINKEDIT` table.
///
/// Each range must lie inside the image's bytes and must not overlap a range claimed
/// before it (LLVM's `checkOverlappingElement`, including its order of comparison, so
/// the reader refuses exactly what `llvm-objdump-19` refuses). Empty ranges are never
/// recorded.
struct FileLayout {
    /// One claimed range and what it holds.
    struct Element {
        let offset: UInt64, size: UInt64, name: String
        var end: UInt64 { offset &+ size }
    }

    /// The image's size in bytes (a universal slice's own size).
    let fileSize: UInt64
    /// Claimed ranges, kept in the order LLVM keeps them.
    private(set) var elements: [Element]

    /// A layout whose first claim is the Mach-O header and its load commands.
    init(fileSize: Int, headersOffset: UInt64 = 0, headersSize: UInt64) {
        self.fileSize = UInt64(fileSize)
        elements = [Element(offset: headersOffset, size: headersSize, name: "Mach-O headers")]
    }

    /// Fails unless `offset` and `offset + size` lie inside the file, then claims the
    /// range as `name`.
    /// - Parameters:
    ///   - fields: how the command names the range, e.g. "fileoff field plus filesize field".
    ///   - site: the load command, for the error's wording and offset.
    ///   - fieldOffset: where the offset field is within the command.
    mutating func claim(
        offset: UInt64, size: UInt64, name: String, fields: (offset: String, size: String),
        at site: LoadCommandSite, fieldOffset: Int
    ) throws(MachOError) {
        try checkInside(offset: offset, size: size, fields: fields, at: site, fieldOffset: fieldOffset)
        try claimWithoutBoundsCheck(offset: offset, size: size, name: name, at: site, fieldOffset: fieldOffset)
    }

    /// Fails unless `[offset, offset + size)` lies inside the file.
    func checkInside(
        offset: UInt64, size: UInt64, fields: (offset: String, size: String),
        at site: LoadCommandSite, fieldOffset: Int
    ) throws(MachOError) {
        guard offset <= fileSize else {
            throw site.error("\(fields.offset) \(hex(offset)) extends past the end of the file (\(hex(fileSize)) bytes)", field: fieldOffset)
        }
        let (end, overflow) = offset.addingReportingOverflow(size)
        guard !overflow, end <= fileSize else {
            throw site.error(
                "\(fields.offset) plus \(fields.size) (\(hex(offset)) + \(hex(size))) extends past the end of the file (\(hex(fileSize)) bytes)",
                field: fieldOffset)
        }
    }

    /// Claims a range already known to lie inside the file; fails if it overlaps an
    /// earlier claim.
    mutating func claimWithoutBoundsCheck(
        offset: UInt64, size: UInt64, name: String, at site: LoadCommandSite, fieldOffset: Int
    ) throws(MachOError) {
        guard size != 0 else { return }
        let end = offset &+ size
        for (index, element) in elements.enumerated() {
            if overlaps(offset, end, element.offset, element.end) {
                throw site.error(
                    "\(name) at \(hex(offset)) (\(hex(size)) bytes) overlaps \(element.name) at \(hex(element.offset)) (\(hex(element.size)) bytes)",
                    field: fieldOffset)
            }
            if index + 1 < elements.count, end <= elements[index + 1].offset {
                elements.insert(Element(offset: offset, size: size, name: name), at: index + 1)
                return
            }
        }
        elements.append(Element(offset: offset, size: size, name: name))
    }
}

/// LLVM's overlap test (`checkOverlappingElement`): `[start, end)` starts inside
/// `[otherStart, otherEnd)`, ends inside it or covers it.
func overlaps<Offset: Comparable>(_ start: Offset, _ end: Offset, _ otherStart: Offset, _ otherEnd: Offset) -> Bool {
    (start >= otherStart && start < otherEnd) || (end > otherStart && end < otherEnd) || (start <= otherStart && end >= otherEnd)
}
