import MachOReader

/// `--bind`, `--lazy-bind` and `--weak-bind`: a bind opcode stream as llvm-objdump lists it
/// (printBindTable, printLazyBindTable, printWeakBindTable). Images without LC_DYLD_INFO
/// show only the title and column header.
enum BindTable {
    static func write<Output: TextOutputStream>(_ image: MachOImage, kind: BindStreamKind, to out: inout Output) throws(MachOError) {
        var text = TextBuffer()
        defer { text.flush(to: &out) }
        let title = switch kind {
        case .regular: "\nBind table:\nsegment  section            address    type       addend dylib            symbol\n"
        case .lazy: "\nLazy bind table:\nsegment  section            address     dylib            symbol\n"
        case .weak: "\nWeak bind table:\nsegment  section            address     type       addend   symbol\n"
        }
        text.write(title)
        let shortNames = LibraryShortNames(image)
        var places = FixupPlaces(segmentsOf: image)
        try image.forEachBindFixup(in: kind) { (fixup) throws(MachOError) in
            try writeRow(fixup, image, shortNames: shortNames, places: &places, to: &text)
            text.write(ascii: UInt8(ascii: "\n"))
            text.flushIfFull(to: &out)
        }
    }

    private static func writeRow(
        _ fixup: BindFixup, _ image: MachOImage, shortNames: LibraryShortNames, places: inout FixupPlaces,
        to text: inout TextBuffer
    ) throws(MachOError) {
        // A strong definition has no location; like llvm, any weak-stream entry made while
        // the non-weak-definition flag is set prints as one.
        guard let location = fixup.location, !(fixup.stream == .weak && fixup.flags.contains(.nonWeakDefinition)) else {
            text.blanks(40)
            text.write("strong              ")
            text.write(fixup.symbolName)
            return
        }
        try places.place(of: location, in: image).write(to: &text)
        switch fixup.stream {
        case .regular:
            text.column(RebaseTable.typeName(fixup.type), 8)
            text.decimal(fixup.addend, width: 8)
            text.write(" ")
            text.column(shortNames[fixup.libraryOrdinal], 16)
            text.write(fixup.symbolName)
            if fixup.flags.contains(.weakImport) { text.write(" (weak_import)") }
        case .lazy:
            text.column(shortNames[fixup.libraryOrdinal], 16)
            text.write(fixup.symbolName)
        case .weak:
            text.column(RebaseTable.typeName(fixup.type), 8)
            text.decimal(fixup.addend, width: 8)
            text.write("   ")
            text.write(fixup.symbolName)
        }
    }
}
