import MachOReader

/// `--rebase`: the rebase opcode stream as `llvm-objdump --macho --rebase` lists it.
/// Images without LC_DYLD_INFO (chained fixups) show only the title and column header.
enum RebaseTable {
    static func write<Output: TextOutputStream>(_ image: MachOImage, to out: inout Output) throws(MachOError) {
        out.write("\nRebase table:\nsegment  section            address     type\n")
        try image.forEachRebaseFixup { (fixup) throws(MachOError) in
            let place = try OpcodeFixupPlace(fixup.location, in: image)
            Text.writePadded(place.segmentName, 8, to: &out)
            out.write(" ")
            Text.writePadded(place.sectionName, 18, to: &out)
            out.write(" 0x")
            Text.writeHex(place.address, width: 8, to: &out)
            out.write("  ")
            out.write(typeName(fixup.type))
            out.write("\n")
        }
    }

    /// llvm's names for rebase types.
    static func typeName(_ type: RebaseType) -> String {
        switch type {
        case .pointer: "pointer"
        case .textAbsolute32: "text abs32"
        case .textPCRelative32: "text rel32"
        default: "unknown"
        }
    }
}
