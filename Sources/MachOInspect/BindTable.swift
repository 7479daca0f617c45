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
        // Short names per ordinal, worked out once: `shortNames[ordinal + 3]` for the
        // special ordinals (-3...0) and every dependency's.
        let shortNames = (-3...image.dependencies.count).map { LibraryShortName.forOrdinal($0, in: image) }
        try image.forEachBindFixup(in: kind) { (fixup) throws(MachOError) in
            try writeRow(fixup, image, shortNames: shortNames, to: &out)
            out.write("\n")
        }
    }

    private static func writeRow<Output: TextOutputStream>(
        _ fixup: BindFixup, _ image: MachOImage, shortNames: [String], to out: inout Output
    ) throws(MachOError) {
        // A strong definition has no location; like llvm, any weak-stream entry made while
        // the non-weak-definition flag is set prints as one.
        guard let location = fixup.location, !(fixup.stream == .weak && fixup.flags.contains(.nonWeakDefinition)) else {
            Text.writePadded("", 40, to: &out)
            out.write("strong              ")
            out.write(fixup.symbolName)
            return
        }
        let place = try OpcodeFixupPlace(location, in: image)
        Text.writePadded(place.segmentName, 8, to: &out)
        out.write(" ")
        Text.writePadded(place.sectionName, 18, to: &out)
        out.write(" 0x")
        Text.writeHex(place.address, width: 8, to: &out)
        out.write(" ")
        let ordinal = fixup.libraryOrdinal
        let shortName = ordinal >= -3 && ordinal + 3 < shortNames.count
            ? shortNames[ordinal + 3] : LibraryShortName.forOrdinal(ordinal, in: image)
        switch fixup.stream {
        case .regular:
            Text.writePadded(typeName(fixup.type), 8, to: &out)
            out.write(" ")
            Text.writePaddedLeft(String(fixup.addend), 8, to: &out)
            out.write(" ")
            Text.writePadded(shortName, 16, to: &out)
            out.write(" ")
            out.write(fixup.symbolName)
            if fixup.flags.contains(.weakImport) { out.write(" (weak_import)") }
        case .lazy:
            Text.writePadded(shortName, 16, to: &out)
            out.write(" ")
            out.write(fixup.symbolName)
        case .weak:
            Text.writePadded(typeName(fixup.type), 8, to: &out)
            out.write(" ")
            Text.writePaddedLeft(String(fixup.addend), 8, to: &out)
            out.write("   ")
            out.write(fixup.symbolName)
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
