import MachOReader

/// `--rebase`: the rebase opcode stream as `llvm-objdump --macho --rebase` lists it.
/// Images without LC_DYLD_INFO (chained fixups) show only the title and column header.
enum RebaseTable {
    static func write<Output: TextOutputStream>(_ image: MachOImage, to out: inout Output) throws(MachOError) {
        var text = TextBuffer()
        defer { text.flush(to: &out) }
        text.write("\nRebase table:\nsegment  section            address     type\n")
        var places = FixupPlaces(segmentsOf: image)
        try image.forEachRebaseFixup { (fixup) throws(MachOError) in
            try places.place(of: fixup.location, in: image).write(to: &text)
            text.write(" ")
            text.write(typeName(fixup.type))
            text.write(ascii: UInt8(ascii: "\n"))
            text.flushIfFull(to: &out)
        }
    }

    /// llvm's names for rebase and bind types.
    static func typeName(_ type: RebaseType) -> String {
        switch type {
        case .pointer: "pointer"
        case .textAbsolute32: "text abs32"
        case .textPCRelative32: "text rel32"
        default: "unknown"
        }
    }
}
