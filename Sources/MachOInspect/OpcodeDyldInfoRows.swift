import MachOReader

/// The `--dyld-info` rows of an image whose fixups are dyld-info opcode streams.
///
/// llvm-objdump 19 prints no rows for such images (its `--dyld-info` walks chained fixups
/// only), so these rows extend its format: every rebase, bind, lazy bind and weak bind, in
/// address order, laid out as llvm lays out chained fixups. A rebase's target is the
/// unslid address stored at its location; a bind names its symbol, and a weak bind has the
/// weak-lookup ordinal, as a chained weak bind does. Strong-definition entries of the
/// weak-bind stream fix nothing up and have no row.
enum OpcodeDyldInfoRows {
    static func rows(_ image: MachOImage) throws(MachOError) -> [DyldInfoRow] {
        var rows: [DyldInfoRow] = []
        try image.forEachRebaseFixup { (fixup) throws(MachOError) in
            let place = try OpcodeFixupPlace(fixup.location, in: image)
            let pointer = try storedPointer(at: fixup.location, in: image)
            rows.append(DyldInfoRow(
                segment: place.segmentName, section: place.sectionName, address: place.address,
                pointer: pointer, type: "rebase", addend: nil, dylib: "",
                target: "0x" + Text.hex(pointer)))
        }
        for stream in BindStreamKind.allCases {
            try image.forEachBindFixup(in: stream) { (fixup) throws(MachOError) in
                guard let location = fixup.location else { return }
                let place = try OpcodeFixupPlace(location, in: image)
                rows.append(DyldInfoRow(
                    segment: place.segmentName, section: place.sectionName, address: place.address,
                    pointer: try storedPointer(at: location, in: image), type: "bind", addend: fixup.addend,
                    dylib: LibraryShortName.forOrdinal(fixup.libraryOrdinal, in: image),
                    target: fixup.symbolName, weakImport: fixup.flags.contains(.weakImport)))
            }
        }
        // Stable: at one address, rebases come before binds, and binds keep stream order.
        return rows.enumerated()
            .sorted { ($0.element.address, $0.offset) < ($1.element.address, $1.offset) }
            .map(\.element)
    }

    /// The 8 bytes on disk at a fixup's location (the decoders checked they are in the file).
    private static func storedPointer(at location: FixupLocation, in image: MachOImage) throws(MachOError) -> UInt64 {
        let segment = image.segments[location.segmentIndex]
        return try image.view.u64(Int(segment.fileOffset + location.segmentOffset))
    }
}
