import MachOReader

/// Names for the coded fields of the header and load commands, in `<mach-o/loader.h>`'s
/// words (platforms in dyld's), for the summary and `--load-commands`.
enum MachONames {
    /// An SDK version (``Swift/UInt32/versionString``); 0 means the linker did not record one.
    static func sdk(_ packed: UInt32) -> String { packed == 0 ? "n/a" : packed.versionString }

    /// `A.B[.C[.D[.E]]]` of LC_SOURCE_VERSION, trailing zero components left out past `A.B`.
    static func sourceVersion(_ version: SourceVersion) -> String {
        var components = version.components
        while components.count > 2, components.last == 0 { components.removeLast() }
        return components.map(String.init).joined(separator: ".")
    }

    /// `PLATFORM_*` of LC_BUILD_VERSION by the name dyld prints, from 0.
    static let platformNames = [
        "unknown", "macOS", "iOS", "tvOS", "watchOS", "bridgeOS", "Mac Catalyst", "iOS simulator", "tvOS simulator",
        "watchOS simulator", "DriverKit", "visionOS", "visionOS simulator", "firmware", "sepOS",
    ]

    static func platform(_ number: UInt32) -> String {
        number < platformNames.count ? platformNames[Int(number)] : "platform \(number)"
    }

    /// `TOOL_*` of a build version's tool entry, from 1.
    static let buildToolNames = ["clang", "swift", "ld", "lld"]

    static func buildTool(_ number: UInt32) -> String {
        (1...UInt32(buildToolNames.count)).contains(number) ? buildToolNames[Int(number) - 1] : String(number)
    }

    static let headerFlagNames: [(UInt32, String)] = [
        (0x1, "MH_NOUNDEFS"), (0x2, "MH_INCRLINK"), (0x4, "MH_DYLDLINK"), (0x8, "MH_BINDATLOAD"),
        (0x10, "MH_PREBOUND"), (0x20, "MH_SPLIT_SEGS"), (0x40, "MH_LAZY_INIT"), (0x80, "MH_TWOLEVEL"),
        (0x100, "MH_FORCE_FLAT"), (0x200, "MH_NOMULTIDEFS"), (0x400, "MH_NOFIXPREBINDING"), (0x800, "MH_PREBINDABLE"),
        (0x1000, "MH_ALLMODSBOUND"), (0x2000, "MH_SUBSECTIONS_VIA_SYMBOLS"), (0x4000, "MH_CANONICAL"),
        (0x8000, "MH_WEAK_DEFINES"), (0x1_0000, "MH_BINDS_TO_WEAK"), (0x2_0000, "MH_ALLOW_STACK_EXECUTION"),
        (0x4_0000, "MH_ROOT_SAFE"), (0x8_0000, "MH_SETUID_SAFE"), (0x10_0000, "MH_NO_REEXPORTED_DYLIBS"),
        (0x20_0000, "MH_PIE"), (0x40_0000, "MH_DEAD_STRIPPABLE_DYLIB"), (0x80_0000, "MH_HAS_TLV_DESCRIPTORS"),
        (0x100_0000, "MH_NO_HEAP_EXECUTION"), (0x200_0000, "MH_APP_EXTENSION_SAFE"),
        (0x400_0000, "MH_NLIST_OUTOFSYNC_WITH_DYLDINFO"), (0x800_0000, "MH_SIM_SUPPORT"),
        (0x1000_0000, "MH_IMPLICIT_PAGEZERO"), (0x8000_0000, "MH_DYLIB_IN_CACHE"),
    ]

    /// The header flags by name, lowest bit first; bits without a name as one hex value.
    static func headerFlags(_ flags: UInt32) -> [String] { named(flags, headerFlagNames) }

    static let segmentFlagNames: [(UInt32, String)] = [
        (0x1, "SG_HIGHVM"), (0x2, "SG_FVMLIB"), (0x4, "SG_NORELOC"), (0x8, "SG_PROTECTED_VERSION_1"), (0x10, "SG_READ_ONLY"),
    ]

    static func segmentFlags(_ flags: UInt32) -> [String] { named(flags, segmentFlagNames) }

    static let sectionTypeNames: [String] = [
        "S_REGULAR", "S_ZEROFILL", "S_CSTRING_LITERALS", "S_4BYTE_LITERALS", "S_8BYTE_LITERALS", "S_LITERAL_POINTERS",
        "S_NON_LAZY_SYMBOL_POINTERS", "S_LAZY_SYMBOL_POINTERS", "S_SYMBOL_STUBS", "S_MOD_INIT_FUNC_POINTERS",
        "S_MOD_TERM_FUNC_POINTERS", "S_COALESCED", "S_GB_ZEROFILL", "S_INTERPOSING", "S_16BYTE_LITERALS", "S_DTRACE_DOF",
        "S_LAZY_DYLIB_SYMBOL_POINTERS", "S_THREAD_LOCAL_REGULAR", "S_THREAD_LOCAL_ZEROFILL", "S_THREAD_LOCAL_VARIABLES",
        "S_THREAD_LOCAL_VARIABLE_POINTERS", "S_THREAD_LOCAL_INIT_FUNCTION_POINTERS", "S_INIT_FUNC_OFFSETS",
    ]

    /// `SECTION_TYPE` (the low byte of a section's flags) by name.
    static func sectionType(_ type: UInt8) -> String {
        Int(type) < sectionTypeNames.count ? sectionTypeNames[Int(type)] : "0x" + Text.hex(UInt64(type), width: 2)
    }

    /// In the order llvm-objdump and otool print them.
    static let sectionAttributeNames: [(UInt32, String)] = [
        (0x8000_0000, "S_ATTR_PURE_INSTRUCTIONS"), (0x4000_0000, "S_ATTR_NO_TOC"), (0x2000_0000, "S_ATTR_STRIP_STATIC_SYMS"),
        (0x1000_0000, "S_ATTR_NO_DEAD_STRIP"), (0x800_0000, "S_ATTR_LIVE_SUPPORT"), (0x400_0000, "S_ATTR_SELF_MODIFYING_CODE"),
        (0x200_0000, "S_ATTR_DEBUG"), (0x400, "S_ATTR_SOME_INSTRUCTIONS"), (0x200, "S_ATTR_EXT_RELOC"), (0x100, "S_ATTR_LOC_RELOC"),
    ]

    /// `SECTION_ATTRIBUTES` (the top three bytes of a section's flags) by name.
    static func sectionAttributes(_ flags: UInt32) -> [String] { named(flags & 0xffff_ff00, sectionAttributeNames) }

    /// The names of the bits set in `value`, in the table's order; the rest as one hex value.
    static func named(_ value: UInt32, _ table: [(UInt32, String)]) -> [String] {
        let (names, rest) = namedBits(value, table)
        return names + (rest != 0 ? ["0x" + Text.hex(UInt64(rest), width: 8)] : [])
    }
}

/// The platform an image was built for, with its minimum OS and SDK versions: from an
/// LC_BUILD_VERSION, or from an LC_VERSION_MIN_* as dyld reads it (the iOS, tvOS and
/// watchOS commands name the simulator in an x86 image).
package struct BuildTarget: Equatable, Sendable {
    /// `PLATFORM_*`.
    package let platform: UInt32, minOS: UInt32, sdk: UInt32

    package var platformName: String { MachONames.platform(platform) }

    /// Every target the image names, in load-command order (a zippered image has two).
    package static func all(_ image: MachOImage) -> [BuildTarget] {
        let x86 = image.header.cpu.type & ~CPUType.abi64 == CPUType.x86Type
        return image.loadCommands.compactMap { command in
            switch command.payload {
            case let .buildVersion(version): return BuildTarget(platform: version.platform, minOS: version.minOS, sdk: version.sdk)
            case let .versionMin(version):
                let platform: UInt32 = switch command.type {
                case .versionMinIPhoneOS: x86 ? 7 : 2
                case .versionMinTVOS: x86 ? 8 : 3
                case .versionMinWatchOS: x86 ? 9 : 4
                default: 1
                }
                return BuildTarget(platform: platform, minOS: version.version, sdk: version.sdk)
            default: return nil
            }
        }
    }

    var json: JSONValue {
        .object([
            ("platform", .string(platformName)), ("min_os", .string(minOS.versionString)),
            ("sdk", sdk == 0 ? .null : .string(sdk.versionString)),
        ])
    }
}
