/// How a dependent dylib is linked, from the load command that names it.
package enum DylibLinkKind: String, Equatable, Hashable, Sendable, Codable {
    case regular, weak, reexport, upward, lazy

    /// The kind each command that names a dependent dylib links it with.
    static let byCommand: [LoadCommandType: DylibLinkKind] = [
        .loadDylib: .regular, .loadWeakDylib: .weak, .reexportDylib: .reexport, .loadUpwardDylib: .upward, .lazyLoadDylib: .lazy,
    ]
}

/// `dylib_command`: an install name with its versions (LC_ID_DYLIB and LC_*_DYLIB).
package struct DylibCommand: Equatable, Sendable {
    package let installName: String, timestamp: UInt32, currentVersion: UInt32, compatibilityVersion: UInt32

    package init(parsing view: ByteView) throws(MachOError) {
        installName = try view.lcString(at: 8)
        (timestamp, currentVersion, compatibilityVersion) = (try view.u32(12), try view.u32(16), try view.u32(20))
    }
}

/// `entry_point_command` (LC_MAIN).
package struct EntryPoint: Equatable, Sendable {
    /// File offset of `main` within the image's `__TEXT`.
    package let entryOffset: UInt64, stackSize: UInt64

    package init(parsing view: ByteView) throws(MachOError) { (entryOffset, stackSize) = (try view.u64(8), try view.u64(16)) }
}

/// `build_version_command` (LC_BUILD_VERSION).
package struct BuildVersion: Equatable, Sendable {
    package let platform: UInt32, minOS: UInt32, sdk: UInt32
    /// (tool, version) pairs.
    package let tools: [(tool: UInt32, version: UInt32)]

    package static func == (a: BuildVersion, b: BuildVersion) -> Bool {
        a.platform == b.platform && a.minOS == b.minOS && a.sdk == b.sdk
            && a.tools.elementsEqual(b.tools, by: { $0 == $1 })
    }

    package init(parsing view: ByteView) throws(MachOError) {
        (platform, minOS, sdk) = (try view.u32(8), try view.u32(12), try view.u32(16))
        let count = try view.u32(20)
        guard UInt64(count) * 8 <= UInt64(max(0, view.count - 24)) else {
            throw MachOError.malformed("LC_BUILD_VERSION claims \(count) tools, more than its command holds", at: view.absolute(20))
        }
        tools = try (0..<Int(count)).map { (index) throws(MachOError) in (try view.u32(24 + index * 8), try view.u32(28 + index * 8)) }
    }
}

/// `version_min_command` (LC_VERSION_MIN_*).
package struct VersionMin: Equatable, Sendable {
    package let version: UInt32, sdk: UInt32

    package init(parsing view: ByteView) throws(MachOError) { (version, sdk) = (try view.u32(8), try view.u32(12)) }
}

/// `symtab_command` (LC_SYMTAB).
package struct SymtabCommand: Equatable, Sendable {
    package let symbolOffset: UInt32, symbolCount: UInt32, stringOffset: UInt32, stringSize: UInt32

    package init(parsing view: ByteView) throws(MachOError) {
        symbolOffset = try view.u32(8); symbolCount = try view.u32(12)
        stringOffset = try view.u32(16); stringSize = try view.u32(20)
    }
}

/// `dysymtab_command` (LC_DYSYMTAB): 18 words after `cmd` and `cmdsize`, read and
/// named as a table: index and count pairs of the symbol table's local, defined external
/// and undefined ranges, then offset and count pairs of six tables.
package struct DysymtabCommand: Equatable, Sendable {
    /// The words' names in `<mach-o/loader.h>` (and llvm-objdump), in command order.
    package static let fieldNames = [
        "ilocalsym", "nlocalsym", "iextdefsym", "nextdefsym", "iundefsym", "nundefsym", "tocoff", "ntoc", "modtaboff", "nmodtab",
        "extrefsymoff", "nextrefsyms", "indirectsymoff", "nindirectsyms", "extreloff", "nextrel", "locreloff", "nlocrel",
    ]
    /// The words, in ``fieldNames`` order; word `index` is at byte `8 + 4 * index`.
    package let fields: [UInt32]

    package init(parsing view: ByteView) throws(MachOError) {
        try view.check(0, 80)
        fields = try (0..<18).map { (index) throws(MachOError) in try view.u32(8 + 4 * index) }
    }
}

/// `linkedit_data_command`: a blob in `__LINKEDIT` (code signature, function starts,
/// chained fixups, exports trie, ...); also each offset and size pair of `dyld_info_command`.
package struct LinkeditData: Equatable, Sendable {
    package let dataOffset: UInt32, dataSize: UInt32

    /// The offset and size fields at `fieldOffset` (8 in a `linkedit_data_command`).
    package init(parsing view: ByteView, at fieldOffset: Int = 8) throws(MachOError) {
        (dataOffset, dataSize) = (try view.u32(fieldOffset), try view.u32(fieldOffset + 4))
    }
}

/// `dyld_info_command` (LC_DYLD_INFO and LC_DYLD_INFO_ONLY): where the opcode streams
/// and the export trie live.
package struct DyldInfo: Equatable, Sendable {
    package let rebase, bind, weakBind, lazyBind, export: LinkeditData

    package init(parsing view: ByteView) throws(MachOError) {
        try view.check(0, 48)
        rebase = try LinkeditData(parsing: view, at: 8)
        bind = try LinkeditData(parsing: view, at: 16)
        weakBind = try LinkeditData(parsing: view, at: 24)
        lazyBind = try LinkeditData(parsing: view, at: 32)
        export = try LinkeditData(parsing: view, at: 40)
    }
}

/// One load command: its type, where it is, and what it says.
package struct LoadCommand: Equatable, Sendable {
    /// What the reader understood of a command's body.
    package enum Payload: Equatable, Sendable {
        case segment(Segment), dylib(DylibLinkKind, DylibCommand), idDylib(DylibCommand), rpath(String)
        case main(EntryPoint), uuid([UInt8]), buildVersion(BuildVersion), versionMin(VersionMin)
        case symtab(SymtabCommand), dysymtab(DysymtabCommand), dyldInfo(DyldInfo)
        /// LC_CODE_SIGNATURE, LC_FUNCTION_STARTS, LC_DATA_IN_CODE, LC_DYLD_CHAINED_FIXUPS,
        /// LC_DYLD_EXPORTS_TRIE, LC_SEGMENT_SPLIT_INFO, ...
        case linkeditData(LinkeditData)
        /// LC_LOAD_DYLINKER and LC_ID_DYLINKER.
        case dylinker(String)
        /// Anything else, not decoded: its bytes are the image's `size` bytes at `offset`.
        case raw
    }

    package let type: LoadCommandType
    /// Offset of the command within its image.
    package let offset: Int, size: UInt32, payload: Payload

    /// Parses one command; `view` spans exactly its `cmdsize` bytes.
    package init(parsing view: ByteView, offsetInImage: Int) throws(MachOError) {
        type = LoadCommandType(rawValue: try view.u32(0))
        size = try view.u32(4)
        offset = offsetInImage
        switch type {
        case .segment64: payload = .segment(try Segment(parsing: view))
        case .loadDylib, .loadWeakDylib, .reexportDylib, .loadUpwardDylib, .lazyLoadDylib:
            payload = .dylib(DylibLinkKind.byCommand[type]!, try DylibCommand(parsing: view))
        case .idDylib: payload = .idDylib(try DylibCommand(parsing: view))
        case .rpath: payload = .rpath(try view.lcString(at: 8))
        case .main: payload = .main(try EntryPoint(parsing: view))
        case .uuid: payload = .uuid(Array(try view.bytes(8, 16)))
        case .buildVersion: payload = .buildVersion(try BuildVersion(parsing: view))
        case .versionMinMacOSX, .versionMinIPhoneOS, .versionMinTVOS, .versionMinWatchOS:
            payload = .versionMin(try VersionMin(parsing: view))
        case .symtab: payload = .symtab(try SymtabCommand(parsing: view))
        case .dysymtab: payload = .dysymtab(try DysymtabCommand(parsing: view))
        case .dyldInfo, .dyldInfoOnly: payload = .dyldInfo(try DyldInfo(parsing: view))
        case .codeSignature, .functionStarts, .dataInCode, .dyldChainedFixups, .dyldExportsTrie,
             .segmentSplitInfo, .dylibCodeSignDRs, .linkerOptimizationHint, .atomInfo,
             .functionVariants, .functionVariantFixups:
            payload = .linkeditData(try LinkeditData(parsing: view))
        case .loadDylinker, .idDylinker, .dyldEnvironment: payload = .dylinker(try view.lcString(at: 8))
        default: payload = .raw
        }
    }
}

extension ByteView {
    /// An `lc_str`: a 32-bit offset at `fieldOffset`, from the command's start, to a
    /// NUL-terminated string that must end inside the command.
    package func lcString(at fieldOffset: Int) throws(MachOError) -> String {
        let stringOffset = try u32(fieldOffset)
        guard stringOffset < UInt32(count) else {
            throw MachOError.malformed("string offset \(stringOffset) is outside its \(count)-byte load command", at: absolute(fieldOffset))
        }
        return try cString(Int(stringOffset))
    }
}
