/// `mach_header_64`: the first 32 bytes of a 64-bit Mach-O image.
package struct MachHeader: Equatable, Sendable {
    package static let magic64: UInt32 = 0xfeed_facf
    package static let magic32: UInt32 = 0xfeed_face
    package static let size = 32

    /// `MH_EXECUTE`, `MH_DYLIB`, `MH_BUNDLE`, ...
    package struct FileType: RawRepresentable, Equatable, Hashable, Sendable, CustomStringConvertible {
        package let rawValue: UInt32
        package init(rawValue: UInt32) { self.rawValue = rawValue }
        package static let object = FileType(rawValue: 1), execute = FileType(rawValue: 2), core = FileType(rawValue: 4)
        package static let dylib = FileType(rawValue: 6), dylinker = FileType(rawValue: 7), bundle = FileType(rawValue: 8)
        package static let dylibStub = FileType(rawValue: 9), dsym = FileType(rawValue: 10)
        /// `MH_OBJECT` through `MH_FILESET`: the types LLVM recognizes a Mach-O file by.
        package static let known: ClosedRange<UInt32> = 1...12

        private static let names: [UInt32: String] = [
            1: "MH_OBJECT", 2: "MH_EXECUTE", 4: "MH_CORE", 6: "MH_DYLIB", 7: "MH_DYLINKER", 8: "MH_BUNDLE", 9: "MH_DYLIB_STUB",
            10: "MH_DSYM", 11: "MH_KEXT_BUNDLE", 12: "MH_FILESET",
        ]
        package var description: String { Self.names[rawValue] ?? "filetype(\(rawValue))" }
    }

    /// Header flags (`MH_TWOLEVEL`, `MH_WEAK_DEFINES`, ...).
    package struct Flags: OptionSet, Sendable {
        package let rawValue: UInt32
        package init(rawValue: UInt32) { self.rawValue = rawValue }
        package static let weakDefines = Flags(rawValue: 0x8000)
    }

    package let cpu: CPUType, fileType: FileType, commandCount: UInt32, commandsSize: UInt32, flags: Flags

    /// Parses the header at the start of `view`. Only 64-bit little-endian images are accepted.
    package init(parsing view: ByteView) throws(MachOError) {
        let magic = try view.u32(0)
        guard magic == MachHeader.magic64 else {
            if magic == MachHeader.magic32 { throw MachOError(offset: view.base, .unsupported("32-bit Mach-O (mach_header) images")) }
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

    /// The header, its load command count bounded by ``MachOImage/maxLoadCommands`` and its
    /// `sizeofcmds` bytes of load commands inside `view`.
    init(parsingWithCommands view: ByteView) throws(MachOError) {
        try self.init(parsing: view)
        guard commandCount <= MachOImage.maxLoadCommands else {
            throw MachOError.malformed("header claims \(commandCount) load commands", at: view.absolute(16))
        }
        try view.check(MachHeader.size, Int(commandsSize))
    }
}
