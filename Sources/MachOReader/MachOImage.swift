/// One parsed 64-bit Mach-O image: its header and load commands, with typed accessors
/// for what a loader needs. Fixups and exports are decoded on demand from `view`
/// (see the `Fixups` and `Exports` extensions).
package struct MachOImage: Sendable {
    /// A real image has far fewer; the cap bounds the work an absurd header can ask for.
    package static let maxLoadCommands: UInt32 = 65_536

    /// The image's bytes (a slice of its file for a universal file).
    package let view: ByteView
    package let header: MachHeader
    package let loadCommands: [LoadCommand]
    /// Bytes from the end of the header to the end of the last load command. LLVM lets the
    /// last command run past `sizeofcmds` (inside the file); dyld does not, and neither do
    /// the launch paths (``ImageFile``).
    package let loadCommandsExtent: Int

    // Derived once at parse time, in load-command order.
    package private(set) var segments: [Segment] = []
    /// Dependent dylibs in load-command order; library ordinal N is `dependencies[N - 1]`.
    package private(set) var dependencies: [Dependency] = []
    package private(set) var rpaths: [String] = []
    package private(set) var id: DylibCommand?
    package private(set) var uuid: [UInt8]?
    package private(set) var entryPoint: EntryPoint?
    package private(set) var dyldInfo: DyldInfo?
    package private(set) var chainedFixups: LinkeditData?
    package private(set) var exportsTrie: LinkeditData?
    package private(set) var functionStarts: LinkeditData?
    package private(set) var codeSignature: LinkeditData?
    package private(set) var symtab: SymtabCommand?
    package private(set) var dysymtab: DysymtabCommand?
    package private(set) var buildVersion: BuildVersion?
    package private(set) var versionMin: (type: LoadCommandType, version: VersionMin)?

    /// A dylib this image links against.
    package struct Dependency: Equatable, Sendable {
        package let kind: DylibLinkKind
        package let command: DylibCommand
        package var installName: String { command.installName }
    }

    /// Where the header lies in ``view``: 0, except for an image of a dyld shared cache, whose
    /// view is the whole cache (its load commands' file offsets are the cache file's).
    package let headerOffset: Int

    /// Parses the image whose header lies at `headerOffset` of `view` (0 for a file's own image).
    package init(parsing view: ByteView, headerOffset: Int = 0) throws(MachOError) {
        self.view = view
        self.headerOffset = headerOffset
        header = try MachHeader(parsingWithCommands: try view.slice(headerOffset, view.count - min(headerOffset, view.count)))
        let commandsEnd = headerOffset + MachHeader.size + Int(header.commandsSize)

        // Every command is checked as llvm-objdump checks it before it is parsed.
        var checks = try StructureCheck(header: header, view: view, headerOffset: headerOffset)
        var commands: [LoadCommand] = []
        var offset = headerOffset + MachHeader.size
        for index in 0..<Int(header.commandCount) {
            // LLVM's walk: each command's 8-byte header lies inside sizeofcmds (command 0's
            // by StructureCheck's first check), its body only inside the file.
            guard offset + 8 <= commandsEnd else {
                throw MachOError.malformed("load command \(index) starts past sizeofcmds (\(header.commandsSize) bytes)", at: view.absolute(offset))
            }
            let size = Int(try view.u32(offset + 4))
            guard size >= 8 else {
                throw MachOError.malformed("load command \(index): cmdsize \(size) is less than 8", at: view.absolute(offset + 4))
            }
            guard offset + size <= view.count else {
                throw MachOError.malformed("load command \(index) (cmdsize \(size)) extends past the end of the file", at: view.absolute(offset))
            }
            let commandView = try view.slice(offset, size)
            try checks.check(commandView, index: index)
            commands.append(try LoadCommand(parsing: commandView, offsetInImage: offset - headerOffset))
            offset += size
        }
        try checks.finish(view)
        loadCommands = commands
        loadCommandsExtent = offset - headerOffset - MachHeader.size

        for command in commands {
            switch command.payload {
            case let .segment(segment): segments.append(segment)
            case let .dylib(kind, dylib): dependencies.append(Dependency(kind: kind, command: dylib))
            case let .idDylib(dylib): id = dylib
            case let .rpath(path): rpaths.append(path)
            case let .main(entry): entryPoint = entry
            case let .uuid(bytes): uuid = bytes
            case let .buildVersion(version): buildVersion = version
            case let .versionMin(version): versionMin = (command.type, version)
            case let .symtab(table): symtab = table
            case let .dysymtab(table): dysymtab = table
            case let .dyldInfo(info): dyldInfo = info
            case let .linkeditData(data):
                switch command.type {
                case .dyldChainedFixups: chainedFixups = data
                case .dyldExportsTrie: exportsTrie = data
                case .functionStarts: functionStarts = data
                case .codeSignature: codeSignature = data
                default: break
                }
            case .dylinker, .raw: break
            }
        }
    }

    /// Parses a thin file's image directly from its bytes.
    package init(parsing bytes: [UInt8]) throws(MachOError) {
        try self.init(parsing: ByteView(bytes))
    }

    /// The bytes of a `__LINKEDIT` blob named by file offset and size (relative to the image).
    package func linkeditBytes(offset: UInt32, size: UInt32) throws(MachOError) -> ByteView {
        try view.slice(offset: UInt64(offset), size: UInt64(size))
    }

    /// The bytes of a linkedit-data load command's blob.
    package func linkeditBytes(_ data: LinkeditData) throws(MachOError) -> ByteView {
        try linkeditBytes(offset: data.dataOffset, size: data.dataSize)
    }

    /// The image's preferred load address: the vmaddr of the segment mapped at the header's
    /// file offset (`__TEXT`), or 0.
    package var preferredLoadAddress: UInt64 {
        segments.first(where: { $0.fileOffset == UInt64(headerOffset) && $0.fileSize != 0 })?.vmAddress ?? 0
    }

    /// All sections, in load-command order.
    package var sections: [Section] { segments.flatMap(\.sections) }

    /// `__mod_init_func` and `__init_offsets` style sections, by section type.
    package var initializerSections: [Section] {
        sections.filter { $0.type == Section.typeModInitFuncPointers || $0.type == Section.typeInitFuncOffsets }
    }

    /// The 32-bit image offsets in an `S_INIT_FUNC_OFFSETS` section.
    package func initializerOffsets(in section: Section) throws(MachOError) -> [UInt32] {
        guard section.type == Section.typeInitFuncOffsets else {
            throw MachOError.malformed("section \(section.segmentName),\(section.name) is not S_INIT_FUNC_OFFSETS", at: view.base)
        }
        let bytes = try view.slice(offset: UInt64(section.fileOffset), size: section.size)
        guard bytes.count % 4 == 0 else {
            throw MachOError.malformed("__init_offsets size \(bytes.count) is not a multiple of 4", at: bytes.base)
        }
        var offsets: [UInt32] = []
        offsets.reserveCapacity(bytes.count / 4)
        for index in stride(from: 0, to: bytes.count, by: 4) { offsets.append(try bytes.u32(index)) }
        return offsets
    }
}
