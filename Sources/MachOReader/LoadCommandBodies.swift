/// The load commands ``LoadCommand`` keeps raw (nothing the loader needs), each parsed from
/// the bounded view of its `cmdsize` bytes (``MachOImage/commandView(_:)``) for readers
/// that print every field.

/// `source_version_command` (LC_SOURCE_VERSION): `A.B.C.D.E` packed as a24.b10.c10.d10.e10.
package struct SourceVersion: Equatable, Sendable {
    package let version: UInt64

    package init(parsing view: ByteView) throws(MachOError) { version = try view.u64(8) }

    /// The five components, most significant first.
    package var components: [UInt64] {
        [version >> 40, (version >> 30) & 0x3ff, (version >> 20) & 0x3ff, (version >> 10) & 0x3ff, version & 0x3ff]
    }
}

/// `encryption_info_command` and `encryption_info_command_64` (LC_ENCRYPTION_INFO,
/// LC_ENCRYPTION_INFO_64): the encrypted file range and the encryption system (0: none).
package struct EncryptionInfo: Equatable, Sendable {
    package let cryptOffset: UInt32, cryptSize: UInt32, cryptID: UInt32
    /// The 64-bit command's padding word; nil in the 32-bit command.
    package let pad: UInt32?

    package init(parsing view: ByteView, is64: Bool) throws(MachOError) {
        (cryptOffset, cryptSize, cryptID) = (try view.u32(8), try view.u32(12), try view.u32(16))
        pad = is64 ? try view.u32(20) : nil
    }
}

/// `linker_option_command` (LC_LINKER_OPTION): `count` NUL-terminated strings after the
/// 12-byte header.
package struct LinkerOption: Equatable, Sendable {
    package let count: UInt32
    /// The strings the command holds (fewer than `count` when its bytes run out first).
    package let strings: [String]

    package init(parsing view: ByteView) throws(MachOError) {
        count = try view.u32(8)
        var strings: [String] = []
        var offset = 12
        // Each string takes at least one byte, so the command's size bounds the walk.
        while strings.count < Int(count), offset < view.count {
            let end = try view.firstZero(offset, view.count - offset) ?? view.count
            strings.append(String(decoding: try view.bytes(offset, end - offset), as: UTF8.self))
            offset = end + 1
        }
        self.strings = strings
    }
}

/// `note_command` (LC_NOTE): a named range of the file for its owner.
package struct NoteCommand: Equatable, Sendable {
    package let dataOwner: String, offset: UInt64, size: UInt64

    package init(parsing view: ByteView) throws(MachOError) {
        (dataOwner, offset, size) = (try view.fixedString(8, 16), try view.u64(24), try view.u64(32))
    }
}

/// `routines_command_64` (LC_ROUTINES_64): the library's initialization routine.
package struct Routines64: Equatable, Sendable {
    package let initAddress: UInt64, initModule: UInt64, reserved: [UInt64]

    package init(parsing view: ByteView) throws(MachOError) {
        (initAddress, initModule) = (try view.u64(8), try view.u64(16))
        reserved = try (0..<6).map { (index) throws(MachOError) in try view.u64(24 + 8 * index) }
    }
}

/// `fileset_entry_command` (LC_FILESET_ENTRY): one image of a file set.
package struct FilesetEntry: Equatable, Sendable {
    package let vmAddress: UInt64, fileOffset: UInt64, entryID: String

    package init(parsing view: ByteView) throws(MachOError) {
        (vmAddress, fileOffset, entryID) = (try view.u64(8), try view.u64(16), try view.lcString(at: 24))
    }
}

/// `twolevel_hints_command` (LC_TWOLEVEL_HINTS).
package struct TwoLevelHints: Equatable, Sendable {
    package let offset: UInt32, count: UInt32

    package init(parsing view: ByteView) throws(MachOError) { (offset, count) = (try view.u32(8), try view.u32(12)) }
}

extension MachOImage {
    /// The bytes of one of the image's load commands: exactly its `cmdsize` bytes.
    package func commandView(_ command: LoadCommand) throws(MachOError) -> ByteView {
        try view.slice(command.offset, Int(command.size))
    }
}

extension Collection<UInt8> {
    /// A UUID (`LC_UUID`'s, a dyld cache's) as `8-4-4-4-12` uppercase hex digits.
    package var uuidString: String {
        enumerated().map { index, byte in ([4, 6, 8, 10].contains(index) ? "-" : "") + (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true) }
            .joined()
    }
}

extension UInt32 {
    /// A packed `xxxx.yy.zz` version (a dylib's current and compatibility versions, a
    /// platform's minimum OS and SDK) as the linker and llvm-objdump spell it.
    package var versionString: String { "\(self >> 16).\((self >> 8) & 0xff).\(self & 0xff)" }
}
