import MachOReader

/// Text output of `dyld3 inspect`, laid out as `llvm-objdump --macho` lays it out: a
/// `FILE:` or `FILE (architecture A):` line per slice, then each asked-for table in
/// llvm-objdump's order.
public enum ObjdumpReport {
    /// The architecture llvm-objdump treats as the host's (it prefers that slice).
    public static let hostArchitecture = "x86_64"

    /// The slices `selection` picks, each with the architecture name its header line shows
    /// (nil when llvm-objdump would print the plain `FILE:` line).
    public static func selectSlices(
        _ file: UniversalFile, _ selection: ArchSelection
    ) throws(MachOError) -> [(slice: UniversalFile.Slice, shownArch: String?)] {
        guard file.isUniversal else {
            if case let .named(arch) = selection, !file.slices[0].cpu.matches(arch) {
                _ = try file.slice(for: arch)
            }
            return [(file.slices[0], nil)]
        }
        switch selection {
        case let .named(arch):
            return [(try file.slice(for: arch), nil)]
        case .host:
            if let slice = file.slices.first(where: { $0.cpu.matches(hostArchitecture) }) {
                return [(slice, nil)]
            }
            fallthrough
        case .all:
            let many = file.slices.count > 1
            return file.slices.map { ($0, many ? $0.cpu.name : nil) }
        }
    }

    /// Renders `tables` for the selected slices of the file at `path`.
    public static func render(
        path: String, bytes: [UInt8], tables: Set<InspectTable>, arch: ArchSelection
    ) throws(MachOError) -> String {
        do {
            let file = try UniversalFile(parsing: bytes)
            var out = ""
            for (slice, shownArch) in try selectSlices(file, arch) {
                let image = try file.image(slice)
                out += path + (shownArch.map { " (architecture \($0))" } ?? "") + ":\n"
                for table in InspectTable.objdumpOrder where tables.contains(table) {
                    out += try renderTable(table, image)
                }
            }
            return out
        } catch {
            throw error.inFile(path)
        }
    }

    /// One table's text for one image, as llvm-objdump prints it after the file line.
    public static func renderTable(_ table: InspectTable, _ image: MachOImage) throws(MachOError) -> String {
        switch table {
        case .rebase: try RebaseTable.render(image)
        case .bind: try BindTable.render(image, kind: .regular)
        case .lazyBind: try BindTable.render(image, kind: .lazy)
        case .weakBind: try BindTable.render(image, kind: .weak)
        case .dyldInfo: try DyldInfoTable.render(image)
        case .chainedFixups: try ChainedFixupsTable.render(image)
        case .exportsTrie: try ExportsTrieTable.render(image)
        case .deps: DependenciesTable.render(image)
        }
    }
}
