/// The `cmd` field of a load command. Every type in `<mach-o/loader.h>` has a name;
/// an unknown value is kept and printed as a number.
package struct LoadCommandType: RawRepresentable, Equatable, Hashable, Sendable, CustomStringConvertible {
    package let rawValue: UInt32
    package init(rawValue: UInt32) { self.rawValue = rawValue }

    /// `LC_REQ_DYLD`: dyld must understand the command or refuse the image.
    package static let requiredByDyld: UInt32 = 0x8000_0000

    package static let segment = Self(rawValue: 0x1), symtab = Self(rawValue: 0x2), symseg = Self(rawValue: 0x3)
    package static let thread = Self(rawValue: 0x4), unixThread = Self(rawValue: 0x5), loadFVMLib = Self(rawValue: 0x6)
    package static let idFVMLib = Self(rawValue: 0x7), ident = Self(rawValue: 0x8), fvmFile = Self(rawValue: 0x9)
    package static let prepage = Self(rawValue: 0xa), dysymtab = Self(rawValue: 0xb), loadDylib = Self(rawValue: 0xc)
    package static let idDylib = Self(rawValue: 0xd), loadDylinker = Self(rawValue: 0xe), idDylinker = Self(rawValue: 0xf)
    package static let preboundDylib = Self(rawValue: 0x10), routines = Self(rawValue: 0x11), subFramework = Self(rawValue: 0x12)
    package static let subUmbrella = Self(rawValue: 0x13), subClient = Self(rawValue: 0x14), subLibrary = Self(rawValue: 0x15)
    package static let twoLevelHints = Self(rawValue: 0x16), prebindChecksum = Self(rawValue: 0x17)
    package static let loadWeakDylib = Self(rawValue: 0x18 | requiredByDyld), segment64 = Self(rawValue: 0x19)
    package static let routines64 = Self(rawValue: 0x1a), uuid = Self(rawValue: 0x1b), rpath = Self(rawValue: 0x1c | requiredByDyld)
    package static let codeSignature = Self(rawValue: 0x1d), segmentSplitInfo = Self(rawValue: 0x1e)
    package static let reexportDylib = Self(rawValue: 0x1f | requiredByDyld), lazyLoadDylib = Self(rawValue: 0x20)
    package static let encryptionInfo = Self(rawValue: 0x21), dyldInfo = Self(rawValue: 0x22)
    package static let dyldInfoOnly = Self(rawValue: 0x22 | requiredByDyld), loadUpwardDylib = Self(rawValue: 0x23 | requiredByDyld)
    package static let versionMinMacOSX = Self(rawValue: 0x24), versionMinIPhoneOS = Self(rawValue: 0x25)
    package static let functionStarts = Self(rawValue: 0x26), dyldEnvironment = Self(rawValue: 0x27)
    package static let main = Self(rawValue: 0x28 | requiredByDyld), dataInCode = Self(rawValue: 0x29), sourceVersion = Self(rawValue: 0x2a)
    package static let dylibCodeSignDRs = Self(rawValue: 0x2b), encryptionInfo64 = Self(rawValue: 0x2c), linkerOption = Self(rawValue: 0x2d)
    package static let linkerOptimizationHint = Self(rawValue: 0x2e), versionMinTVOS = Self(rawValue: 0x2f)
    package static let versionMinWatchOS = Self(rawValue: 0x30), note = Self(rawValue: 0x31), buildVersion = Self(rawValue: 0x32)
    package static let dyldExportsTrie = Self(rawValue: 0x33 | requiredByDyld), dyldChainedFixups = Self(rawValue: 0x34 | requiredByDyld)
    package static let filesetEntry = Self(rawValue: 0x35 | requiredByDyld), atomInfo = Self(rawValue: 0x36)
    package static let functionVariants = Self(rawValue: 0x37), functionVariantFixups = Self(rawValue: 0x38)
    package static let targetTriple = Self(rawValue: 0x39)

    private static let names: [UInt32: String] = [
        0x1: "LC_SEGMENT", 0x2: "LC_SYMTAB", 0x3: "LC_SYMSEG", 0x4: "LC_THREAD",
        0x5: "LC_UNIXTHREAD", 0x6: "LC_LOADFVMLIB", 0x7: "LC_IDFVMLIB", 0x8: "LC_IDENT",
        0x9: "LC_FVMFILE", 0xa: "LC_PREPAGE", 0xb: "LC_DYSYMTAB", 0xc: "LC_LOAD_DYLIB",
        0xd: "LC_ID_DYLIB", 0xe: "LC_LOAD_DYLINKER", 0xf: "LC_ID_DYLINKER",
        0x10: "LC_PREBOUND_DYLIB", 0x11: "LC_ROUTINES", 0x12: "LC_SUB_FRAMEWORK",
        0x13: "LC_SUB_UMBRELLA", 0x14: "LC_SUB_CLIENT", 0x15: "LC_SUB_LIBRARY",
        0x16: "LC_TWOLEVEL_HINTS", 0x17: "LC_PREBIND_CKSUM", 0x8000_0018: "LC_LOAD_WEAK_DYLIB",
        0x19: "LC_SEGMENT_64", 0x1a: "LC_ROUTINES_64", 0x1b: "LC_UUID", 0x8000_001c: "LC_RPATH",
        0x1d: "LC_CODE_SIGNATURE", 0x1e: "LC_SEGMENT_SPLIT_INFO", 0x8000_001f: "LC_REEXPORT_DYLIB",
        0x20: "LC_LAZY_LOAD_DYLIB", 0x21: "LC_ENCRYPTION_INFO", 0x22: "LC_DYLD_INFO",
        0x8000_0022: "LC_DYLD_INFO_ONLY", 0x8000_0023: "LC_LOAD_UPWARD_DYLIB",
        0x24: "LC_VERSION_MIN_MACOSX", 0x25: "LC_VERSION_MIN_IPHONEOS", 0x26: "LC_FUNCTION_STARTS",
        0x27: "LC_DYLD_ENVIRONMENT", 0x8000_0028: "LC_MAIN", 0x29: "LC_DATA_IN_CODE",
        0x2a: "LC_SOURCE_VERSION", 0x2b: "LC_DYLIB_CODE_SIGN_DRS", 0x2c: "LC_ENCRYPTION_INFO_64",
        0x2d: "LC_LINKER_OPTION", 0x2e: "LC_LINKER_OPTIMIZATION_HINT", 0x2f: "LC_VERSION_MIN_TVOS",
        0x30: "LC_VERSION_MIN_WATCHOS", 0x31: "LC_NOTE", 0x32: "LC_BUILD_VERSION",
        0x8000_0033: "LC_DYLD_EXPORTS_TRIE", 0x8000_0034: "LC_DYLD_CHAINED_FIXUPS",
        0x8000_0035: "LC_FILESET_ENTRY", 0x36: "LC_ATOM_INFO", 0x37: "LC_FUNCTION_VARIANTS",
        0x38: "LC_FUNCTION_VARIANT_FIXUPS", 0x39: "LC_TARGET_TRIPLE",
    ]

    /// The `LC_` name, or nil for a type this reader does not know.
    package var name: String? { Self.names[rawValue] }

    package var description: String { name ?? "LC_\(hex(rawValue))" }
}
