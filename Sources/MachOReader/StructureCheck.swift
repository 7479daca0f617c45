/// One load command as the structure checks see it: its index, its type and exactly its
/// `cmdsize` bytes.
struct LoadCommandSite {
    let index: Int, type: LoadCommandType, view: ByteView

    /// An error naming this command, at `field` bytes into it.
    func error(_ what: String, field: Int = 0) -> MachOError {
        MachOError.malformed("load command \(index) (\(type)): \(what)", at: view.absolute(min(field, view.count)))
    }

    var size: UInt32 { UInt32(view.count) }
}

/// The structural checks `llvm-objdump-19` makes when it opens a Mach-O image
/// (LLVM's `MachOObjectFile` constructor), made on each load command as it is read:
/// command sizes, strings inside their commands, one of each singleton command, and every
/// range the commands name (segments, sections, relocations, symbol and string tables,
/// `__LINKEDIT` blobs) inside the file and not overlapping another.
struct StructureCheck {
    let header: MachHeader
    var layout: FileLayout
    /// Singleton commands seen so far, by the name LLVM's "more than one" error uses.
    private var seen: Set<String> = []
    /// LC_SYMTAB's symbol count, once seen.
    var symbolCount: UInt32?
    /// LC_DYSYMTAB, once seen: its symbol ranges are checked against LC_SYMTAB at the end.
    var dysymtab: (site: LoadCommandSite, command: DysymtabCommand)?
    private var hasID = false
    /// The whole-image facts as they stood at the first LC_IDENT. LLVM's walk never gets
    /// past an LC_IDENT (its `continue` skips the advance, so it sees that command again
    /// for every remaining index): an LC_ID_DYLIB, LC_SYMTAB or LC_DYSYMTAB after it does not
    /// count for LLVM's whole-image checks, and so not for these. The later commands' own
    /// checks still run (the reader refuses more than LLVM there, never less).
    private var factsAtIdent: (hasID: Bool, symbolCount: UInt32?, dysymtab: (site: LoadCommandSite, command: DysymtabCommand)?)?

    /// Starts the checks for an image whose header has been read from `view`.
    /// `headerOffset`: where the header lies in `view` (0, or an image's in a dyld shared cache,
    /// whose file offsets are the cache file's).
    init(header: MachHeader, view: ByteView, headerOffset: Int = 0) throws(MachOError) {
        self.header = header
        if header.commandCount != 0 && header.commandsSize < 8 {
            throw MachOError.malformed("load command 0 extends past the end of the load commands (sizeofcmds \(header.commandsSize))", at: view.absolute(headerOffset + 20))
        }
        layout = FileLayout(fileSize: view.count, headersOffset: UInt64(headerOffset), headersSize: UInt64(MachHeader.size) + UInt64(header.commandsSize))
    }

    /// Fails if this command is the second of a kind an image may hold only once.
    mutating func once(_ kind: String, _ site: LoadCommandSite) throws(MachOError) {
        guard seen.insert(kind).inserted else { throw site.error("more than one \(kind) command") }
    }

    /// Fails unless `cmdsize` is exactly `expected`.
    func size(_ site: LoadCommandSite, is expected: Int) throws(MachOError) {
        guard site.view.count == expected else { throw site.error("cmdsize \(site.view.count) is not \(expected)", field: 4) }
    }

    /// Fails unless `cmdsize` is at least `minimum`.
    func size(_ site: LoadCommandSite, atLeast minimum: Int) throws(MachOError) {
        guard site.view.count >= minimum else {
            throw site.error("cmdsize \(site.view.count) is too small (at least \(minimum))", field: 4)
        }
    }

    /// Fails unless `cmdsize` is exactly `expected` and this is the first command of `kind`
    /// (``once(_:_:)``), checking first that it is at least `expected`, then that it is the
    /// first, then its exact size.
    mutating func size(_ site: LoadCommandSite, is expected: Int, once kind: String) throws(MachOError) {
        try size(site, atLeast: expected)
        try once(kind, site)
        try size(site, is: expected)
    }

    /// Checks one load command; `view` spans exactly its `cmdsize` bytes.
    mutating func check(_ view: ByteView, index: Int) throws(MachOError) {
        let type = LoadCommandType(rawValue: try view.u32(0))
        let site = LoadCommandSite(index: index, type: type, view: view)
        let isCoreThread = header.fileType == .core && type == .thread
        guard view.count % 8 == 0 || (isCoreThread && view.count % 4 == 0) else {
            throw site.error("cmdsize \(view.count) is not a multiple of 8", field: 4)
        }
        if type == .ident && factsAtIdent == nil { factsAtIdent = (hasID, symbolCount, dysymtab) }
        switch type {
        case .segment64: try checkSegment(site, layout: .bits64)
        case .segment: try checkSegment(site, layout: .bits32)
        case .symtab: try checkSymtab(site)
        case .dysymtab: try checkDysymtab(site)
        case .dyldInfo, .dyldInfoOnly: try checkDyldInfo(site)
        case .dataInCode, .linkerOptimizationHint, .functionStarts, .segmentSplitInfo, .dylibCodeSignDRs,
             .codeSignature, .dyldChainedFixups, .dyldExportsTrie:
            try checkLinkeditData(site)
        case .note: try checkNote(site)
        case .twoLevelHints: try checkTwoLevelHints(site)
        case .encryptionInfo, .encryptionInfo64: try checkEncryptionInfo(site)
        case .uuid: try size(site, is: 24); try once("LC_UUID", site)
        case .sourceVersion: try size(site, is: 16); try once("LC_SOURCE_VERSION", site)
        case .main: try size(site, is: 24); try once("LC_MAIN", site)
        case .routines: try size(site, is: 40); try once("LC_ROUTINES", site)
        case .routines64: try size(site, is: 72); try once("LC_ROUTINES", site)
        case .versionMinMacOSX, .versionMinIPhoneOS, .versionMinTVOS, .versionMinWatchOS:
            try size(site, is: 16); try once("LC_VERSION_MIN_*", site)
        case .buildVersion: try checkBuildVersion(site)
        case .idDylib:
            try checkString(site, fieldOffset: 8, headerSize: 24)
            try once("LC_ID_DYLIB", site)
            guard header.fileType == .dylib || header.fileType == .dylibStub else {
                throw site.error("LC_ID_DYLIB in a \(header.fileType), which is not a dynamic library")
            }
            hasID = true
        case .loadDylib, .loadWeakDylib, .lazyLoadDylib, .reexportDylib, .loadUpwardDylib:
            try checkString(site, fieldOffset: 8, headerSize: 24)
        case .idDylinker, .loadDylinker, .dyldEnvironment, .rpath, .subFramework, .subUmbrella, .subLibrary, .subClient:
            try checkString(site, fieldOffset: 8, headerSize: 12)
        case .linkerOption: try checkLinkerOption(site)
        case .thread, .unixThread: try checkThread(site)
        case .symseg, .loadFVMLib, .idFVMLib, .fvmFile, .prepage, .preboundDylib, .prebindChecksum:
            throw site.error("obsolete load command (cmd \(hex(type.rawValue))) is not supported")
        default: break
        }
    }

    /// The checks that need every command: LC_DYSYMTAB's symbol ranges inside LC_SYMTAB's
    /// table, and a dylib's LC_ID_DYLIB.
    func finish(_ view: ByteView) throws(MachOError) {
        let (hasID, symbolCount, dysymtab) = factsAtIdent ?? (hasID, symbolCount, dysymtab)
        if let dysymtab {
            guard let symbolCount else { throw dysymtab.site.error("LC_DYSYMTAB without an LC_SYMTAB") }
            try dysymtab.command.checkSymbolRanges(symbolCount: symbolCount, at: dysymtab.site)
        }
        if (header.fileType == .dylib || header.fileType == .dylibStub) && !hasID {
            throw MachOError.malformed("a \(header.fileType) without an LC_ID_DYLIB load command\(factsAtIdent == nil ? "" : " before its first LC_IDENT")", at: view.absolute(12))
        }
    }

    /// An `lc_str` at `fieldOffset`: past the fixed part of the command (`headerSize`
    /// bytes), inside the command, and NUL-terminated inside it.
    func checkString(_ site: LoadCommandSite, fieldOffset: Int, headerSize: Int) throws(MachOError) {
        try size(site, atLeast: headerSize)
        let offset = try site.view.u32(fieldOffset)
        guard offset >= UInt32(headerSize) else {
            throw site.error("string offset \(offset) points inside the command's fixed \(headerSize) bytes", field: fieldOffset)
        }
        guard offset < site.size else {
            throw site.error("string offset \(offset) is past the end of the \(site.size)-byte command", field: fieldOffset)
        }
        guard try site.view.firstZero(Int(offset), site.view.count - Int(offset)) != nil else {
            throw site.error("string at offset \(offset) is not NUL-terminated inside the command", field: fieldOffset)
        }
    }

    mutating func checkBuildVersion(_ site: LoadCommandSite) throws(MachOError) {
        let toolCount = try site.view.u32(20)
        guard UInt64(site.size) == 24 + UInt64(toolCount) * 8 else {
            throw site.error("cmdsize \(site.size) does not hold exactly \(toolCount) tools", field: 4)
        }
    }

    /// LC_LINKER_OPTION: `count` NUL-terminated strings fill the rest of the command.
    func checkLinkerOption(_ site: LoadCommandSite) throws(MachOError) {
        try size(site, atLeast: 12)
        let declared = try site.view.u32(8)
        var found: UInt32 = 0
        var index = 12
        while index < site.view.count {
            if try site.view.u8(index) == 0 { index += 1; continue }
            found += 1
            guard let end = try site.view.firstZero(index, site.view.count - index) else {
                throw site.error("string #\(found) is not NUL-terminated", field: 12)
            }
            index = end + 1
        }
        guard found == declared else { throw site.error("count \(declared) does not match the \(found) strings it holds", field: 8) }
    }
}
