/// One parsed 64-bit Mach-O image: its header and load commands, with typed accessors
/// for what a loader needs. Fixups and exports are decoded on demand from `view`
/// (see the `Fixups` and `Exports` extensions).
package struct MachOImage: Sendable {
    /// A real image has far fewer; the cap bounds the work an absurd header can ask for.
    package static let maxLoadCommands: UInt32 = 65_536

    /// The image's bytes (a slice of its file for a universal file).
    package let view: ByteView, header: MachHeader, loadCommands: [LoadCommand]
    /// Bytes from the end of the header to the end of the last load command. LLVM lets the
    /// last command run past `sizeofcmds` (inside the file); dyld does not, and neither do
    /// the launch paths (``ImageFile``).
    package let loadCommandsExtent: Int

    // Derived once at parse time, in load-command order.
    package private(set) var segments: [Segment] = []
    /// Dependent dylibs in load-command order; library ordinal N is `dependencies[N - 1]`.
    package private(set) var dependencies: [Dependency] = []
    package private(set) var rpaths: [String] = []
    package private(set) var id: DylibCommand?, uuid: [UInt8]?, entryPoint: EntryPoint?, dyldInfo: DyldInfo?
    package private(set) var chainedFixups: LinkeditData?, exportsTrie: LinkeditData?
    package private(set) var functionStarts: LinkeditData?, codeSignature: LinkeditData?
    package private(set) var symtab: SymtabCommand?, dysymtab: DysymtabCommand?, buildVersion: BuildVersion?
    package private(set) var versionMin: (type: LoadCommandType, version: VersionMin)?

    /// A dylib this image links against.
    package struct Dependency: Equatable, Sendable {
        package let kind: DylibLinkKind, command: DylibCommand
        package var installName: String { command.installName }
    }

    /// Where the header lies in ``view``: 0, except for an image of a dyld shared cache, whose
    /// view is the whole cache (its load commands' file offsets are the cache file's).
    package let headerOffset: Int

    /// For an image parsed where a launch mapped it (``init(parsingMapped:)``): per segment with
    /// file bytes, its range in the file (from the slice's start) and its offset in the mapping.
    private var mappedSegments: [MappedSegment]?

    /// A segment's bytes in the file (from the image's start) and where they lie in the mapping.
    private struct MappedSegment: Sendable {
        let file: Range<UInt64>, mappedAt: UInt64
    }

    /// Whether the image was parsed where a launch mapped it, as dyld's `MachOLoaded` reads a
    /// loaded image: its load commands, `__LINKEDIT` and sections are read where they lie, but
    /// its writable segments hold what the launch wrote there (fixups), not the file's bytes,
    /// so neither fixup chains nor page hashes can be read from it.
    package var isMapped: Bool { mappedSegments != nil }

    /// Parses the image whose header lies at `headerOffset` of `view` (0 for a file's own image).
    package init(parsing view: ByteView, headerOffset: Int = 0) throws(MachOError) {
        try self.init(parsing: view, headerOffset: headerOffset, checked: true)
    }

    /// Parses the image whose header lies at `headerOffset` of `cache`, a dyld shared cache
    /// held to the closures' ownership rule: as dyld2 trusts the cache's images, their
    /// structure is the cache builder's, so only the bounds of each read are checked here.
    package init(parsingInCache cache: ByteView, headerOffset: Int) throws(MachOError) {
        try self.init(parsing: cache, headerOffset: headerOffset, checked: false)
    }

    /// Parses the image a launch mapped: `view` is its memory from the lowest mapped segment's
    /// address on, every byte of it readable. Its file's structure was checked when its closure
    /// was built and the file is the one the launch checked and mapped, so only the bounds of
    /// each read are checked here. File offsets (``fileBytes(offset:size:)``) are read through
    /// the segment that holds them.
    package init(parsingMapped view: ByteView) throws(MachOError) {
        try self.init(parsing: view, headerOffset: 0, checked: false)
        let mapped = segments.filter { Segment.isMapped(initialProtection: $0.initialProtection, fileSize: $0.fileSize, vmSize: $0.vmSize) }
        let base = mapped.map(\.vmAddress).min() ?? 0
        mappedSegments = try mapped.filter { $0.fileSize > 0 }.map { (segment) throws(MachOError) in
            let (fileEnd, overflow) = segment.fileOffset.addingReportingOverflow(segment.fileSize)
            guard !overflow, segment.fileSize <= segment.vmSize, segment.vmAddress - base <= UInt64(view.count),
                  segment.vmSize <= UInt64(view.count) - (segment.vmAddress - base) else {
                throw MachOError.malformed("segment \(segment.name) lies outside the mapped image", at: view.base)
            }
            return MappedSegment(file: segment.fileOffset..<fileEnd, mappedAt: segment.vmAddress - base)
        }
        guard mappedSegments?.contains(where: { $0.file.lowerBound == 0 && $0.mappedAt == 0 }) == true else {
            throw MachOError.malformed("no segment maps the header at the image's base", at: view.base)
        }
    }

    private init(parsing view: ByteView, headerOffset: Int, checked: Bool) throws(MachOError) {
        self.view = view
        self.headerOffset = headerOffset
        header = try MachHeader(parsingWithCommands: try view.slice(headerOffset, view.count - min(headerOffset, view.count)))
        let commandsEnd = headerOffset + MachHeader.size + Int(header.commandsSize)

        // Every command of a file is checked as llvm-objdump checks it before it is parsed.
        var checks = checked ? try StructureCheck(header: header, view: view, headerOffset: headerOffset) : nil
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
            try checks?.check(commandView, index: index)
            commands.append(try LoadCommand(parsing: commandView, offsetInImage: offset - headerOffset))
            offset += size
        }
        try checks?.finish(view)
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
    package init(parsing bytes: [UInt8]) throws(MachOError) { try self.init(parsing: ByteView(bytes)) }

    /// The `size` bytes the file holds at `offset` (from the image's start): from ``view``, or
    /// for a mapped image, where the segment holding them lies in the mapping.
    package func fileBytes(offset: UInt64, size: UInt64) throws(MachOError) -> ByteView {
        guard let mappedSegments else { return try view.slice(offset: offset, size: size) }
        guard let segment = mappedSegments.first(where: { $0.file.contains(offset) || ($0.file.upperBound == offset && size == 0) }),
              size <= segment.file.upperBound - offset else {
            throw MachOError.malformed("file bytes \(hex(offset))+\(hex(size)) lie in no segment of the mapped image", at: view.base)
        }
        return try view.slice(offset: segment.mappedAt + (offset - segment.file.lowerBound), size: size)
    }

    /// The bytes of a linkedit-data load command's blob (file offset and size relative to the image).
    package func linkeditBytes(_ data: LinkeditData) throws(MachOError) -> ByteView {
        try fileBytes(offset: UInt64(data.dataOffset), size: UInt64(data.dataSize))
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
        let bytes = try fileBytes(offset: UInt64(section.fileOffset), size: section.size)
        guard bytes.count % 4 == 0 else {
            throw MachOError.malformed("__init_offsets size \(bytes.count) is not a multiple of 4", at: bytes.base)
        }
        return try stride(from: 0, to: bytes.count, by: 4).map { (index) throws(MachOError) in try bytes.u32(index) }
    }
}
