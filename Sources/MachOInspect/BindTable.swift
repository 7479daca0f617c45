import MachOReader

/// `--bind`, `--lazy-bind` and `--weak-bind`: a bind opcode stream as llvm-objdump lists it
/// (printBindTable, printLazyBindTable, printWeakBindTable). Images without LC_DYLD_INFO
/// show only the title and column header.
enum BindTable {
    static func write<Output: TextOutputStream>(_ image: MachOImage, kind: BindStreamKind, to out: inout Output) throws(MachOError) {
        let title = switch kind {
        case .regular: "\nBind table:\nsegment  section            address    type       addend dylib            symbol\n"
        case .lazy: "\nLazy bind table:\nsegment  section            address     dylib            symbol\n"
        case .weak: "\nWeak bind table:\nsegment  section            address     type       addend   symbol\n"
        }
        out.write(title)
        try image.forEachBindFixup(in: kind) { (fixup) throws(MachOError) in
            out.write(try row(fixup, image))
            out.write("\n")
        }
    }

    private static func row(_ fixup: BindFixup, _ image: MachOImage) throws(MachOError) -> String {
        // A strong definition has no location; like llvm, any weak-stream entry made while
        // the non-weak-definition flag is set prints as one.
        guard let location = fixup.location, !(fixup.stream == .weak && fixup.flags.contains(.nonWeakDefinition)) else {
            return String(repeating: " ", count: 40) + "strong              " + fixup.symbolName
        }
        let place = try OpcodeFixupPlace(location, in: image)
        let lead = Text.pad(place.segmentName, 8) + " " + Text.pad(place.sectionName, 18)
            + " 0x" + Text.hex(place.address, width: 8) + " "
        switch fixup.stream {
        case .regular:
            let attribute = fixup.flags.contains(.weakImport) ? " (weak_import)" : ""
            return lead + Text.pad(typeName(fixup.type), 8) + " " + Text.padLeft(String(fixup.addend), 8) + " "
                + Text.pad(LibraryShortName.forOrdinal(fixup.libraryOrdinal, in: image), 16) + " "
                + fixup.symbolName + attribute
        case .lazy:
            return lead + Text.pad(LibraryShortName.forOrdinal(fixup.libraryOrdinal, in: image), 16) + " "
                + fixup.symbolName
        case .weak:
            return lead + Text.pad(typeName(fixup.type), 8) + " " + Text.padLeft(String(fixup.addend), 8) + "   "
                + fixup.symbolName
        }
    }

    /// llvm's names for bind types.
    static func typeName(_ type: BindType) -> String {
        switch type {
        case .pointer: "pointer"
        case .textAbsolute32: "text abs32"
        case .textPCRelative32: "text rel32"
        default: "unknown"
        }
    }
}
