import MachOReader

/// Text output of `dyld3 inspect`, laid out as `llvm-objdump --macho` lays it out: a
/// `FILE:` or `FILE (architecture A):` line per slice, then each asked-for table in
/// llvm-objdump's order.
package enum ObjdumpReport {
    /// The architecture llvm-objdump treats as the host's (it prefers that slice).
    package static let hostArchitecture = "x86_64"

    /// The slices `selection` picks, each with the architecture name its header line shows
    /// (nil when llvm-objdump would print the plain `FILE:` line).
    package static func selectSlices(
        _ file: UniversalFile, _ selection: ArchSelection
    ) throws(MachOError) -> [(slice: UniversalFile.Slice, shownArch: String?)] {
        guard file.isUniversal else {
            if case let .named(arch) = selection, !file.slices[0].cpu.matches(arch) { _ = try file.slice(for: arch) }
            return [(file.slices[0], nil)]
        }
        switch selection {
        case let .named(arch): return [(try file.slice(for: arch), nil)]
        case .host:
            if let slice = file.slices.first(where: { $0.cpu.matches(hostArchitecture) }) { return [(slice, nil)] }
            fallthrough
        case .all:
            let many = file.slices.count > 1
            return file.slices.map { ($0, many ? $0.cpu.name : nil) }
        }
    }

    /// Writes `tables` for the selected slices of the file at `path` to `out`, row by row
    /// as they are decoded: nothing grows with the file but what a table needs to lay out
    /// its columns. Rows written before an error stay written, as llvm-objdump's do.
    package static func write<Output: TextOutputStream>(
        path: String, file bytes: ByteView, tables: Set<InspectTable>, arch: ArchSelection, to out: inout Output
    ) throws(MachOError) {
        try forEachSlice(path: path, file: bytes, arch) { (_, _, image, shownArch) throws(MachOError) in
            out.write(path + (shownArch.map { " (architecture \($0))" } ?? "") + ":\n")
            for table in InspectTable.objdumpOrder where tables.contains(table) { try writeTable(table, image, to: &out) }
        }
    }

    /// Runs `body` on each slice `arch` selects (``selectSlices(_:_:)``) of the file at `path`,
    /// whose bytes are `bytes`, with the file, the slice, its image and the architecture its
    /// header line shows; an error names the file.
    static func forEachSlice(
        path: String, file bytes: ByteView, _ arch: ArchSelection,
        _ body: (UniversalFile, UniversalFile.Slice, MachOImage, String?) throws(MachOError) -> Void
    ) throws(MachOError) {
        do {
            let file = try UniversalFile(parsing: bytes)
            for (slice, shownArch) in try selectSlices(file, arch) { try body(file, slice, try file.image(slice), shownArch) }
        } catch {
            throw error.inFile(path)
        }
    }

    /// ``write(path:file:tables:arch:to:)`` into a string (tests and the fuzzer).
    package static func render(
        path: String, bytes: [UInt8], tables: Set<InspectTable>, arch: ArchSelection
    ) throws(MachOError) -> String {
        var out = ""
        try write(path: path, file: ByteView(bytes), tables: tables, arch: arch, to: &out)
        return out
    }

    /// Writes one table for one image, as llvm-objdump prints it after the file line.
    package static func writeTable<Output: TextOutputStream>(
        _ table: InspectTable, _ image: MachOImage, to out: inout Output
    ) throws(MachOError) {
        switch table {
        case .rebase: try RebaseTable.write(image, to: &out)
        case .bind: try BindTable.write(image, kind: .regular, to: &out)
        case .lazyBind: try BindTable.write(image, kind: .lazy, to: &out)
        case .weakBind: try BindTable.write(image, kind: .weak, to: &out)
        case .dyldInfo: try DyldInfoTable.write(image, to: &out)
        case .chainedFixups: try ChainedFixupsTable.write(image, to: &out)
        case .exportsTrie: try ExportsTrieTable.write(image, to: &out)
        case .deps: DependenciesTable.write(image, to: &out)
        case .objc: try ObjCMetadataTable.write(image, to: &out)
        case .objcSummary: try ObjCTable.write(image, to: &out)
        case .codeSignature: try CodeSignatureTable.write(image, to: &out)
        case .threadLocals: try DyldFeaturesTable.writeThreadLocals(image, to: &out)
        case .interpose: try DyldFeaturesTable.writeInterpose(image, to: &out)
        case .loadCommands: try LoadCommandsTable.write(image, to: &out)
        }
    }
}
