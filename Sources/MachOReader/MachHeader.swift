/// `mach_header_64`: the first 32 bytes of a 64-bit Mach-O image.
public struct MachHeader: Equatable, Sendable {
    public static let magic64: UInt32 = 0xfeed_facf
    public static let magic32: UInt32 = 0xfeed_face
    public static let size = 32

    /// `MH_EXECUTE`, `MH_DYLIB`, `MH_BUNDLE`, ...
    public struct FileType: RawRepresentable, Equatable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        public static let object = FileType(rawValue: 1)
        public static let execute = FileType(rawValue: 2)
        public static let core = FileType(rawValue: 4)
        public static let dylib = FileType(rawValue: 6)
        public static let dylinker = FileType(rawValue: 7)
        public static let bundle = FileType(rawValue: 8)
        public static let dylibStub = FileType(rawValue: 9)
        public static let dsym = FileType(rawValue: 10)
        public static let kextBundle = FileType(rawValue: 11)
        public static let fileset = FileType(rawValue: 12)
        /// `MH_OBJECT` through `MH_FILESET`: the types LLVM recognizes a Mach-O file by.
        public static let known: ClosedRange<UInt32> = 1...12

        public var description: String {
            switch self {
            case .object: "MH_OBJECT"
            case .execute: "MH_EXECUTE"
            case .core: "MH_CORE"
            case .dylib: "MH_DYLIB"
            case .dylinker: "MH_DYLINKER"
            case .bundle: "MH_BUNDLE"
            case .dylibStub: "MH_DYLIB_STUB"
            case .dsym: "MH_DSYM"
            case .kextBundle: "MH_KEXT_BUNDLE"
            case .fileset: "MH_FILESET"
            default: "filetype(\(rawValue))"
            }
        }
    }

    /// Header flags (`MH_TWOLEVEL`, `MH_WEAK_DEFINES`, ...).
    public struct Flags: OptionSet, Sendable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        public static let noUndefs = Flags(rawValue: 0x1)
        public static let dyldLink = Flags(rawValue: 0x4)
        public static let twoLevel = Flags(rawValue: 0x80)
        public static let forceFlat = Flags(rawValue: 0x100)
        public static let weakDefines = Flags(rawValue: 0x8000)
        public static let bindsToWeak = Flags(rawValue: 0x10000)
        public static let pie = Flags(rawValue: 0x200000)
        public static let hasTLVDescriptors = Flags(rawValue: 0x800000)
        public static let noReexportedDylibs = Flags(rawValue: 0x100000)
    }

    public let cpu: CPUType
    public let fileType: FileType
    public let commandCount: UInt32
    public let commandsSize: UInt32
    public let flags: Flags

    /// Parses the header at the start of `view`. Only 64-bit little-endian images are accepted.
    public init(parsing view: ByteView) throws(MachOError) {
        let magic = try view.u32(0)
        guard magic == MachHeader.magic64 else {
            if magic == MachHeader.magic32 {
                throw MachOError(offset: view.base, .unsupported("32-bit Mach-O (mach_header) images"))
            }
            throw MachOError(offset: view.base, .badMagic(magic))
        }
        cpu = CPUType(type: Int32(bitPattern: try view.u32(4)), subtype: Int32(bitPattern: try view.u32(8)))
        fileType = FileType(rawValue: try view.u32(12))
        commandCount = try view.u32(16)
        commandsSize = try view.u32(20)
        flags = Flags(rawValue: try view.u32(24))
        // 4 reserved bytes at 28 complete the 32-byte header.
        try view.check(0, MachHeader.size)
    }
}
