/// Load commands ``LoadCommand`` keeps raw (nothing the loader needs) whose fields need more
/// than a read at an offset, each parsed from the bounded view of its `cmdsize` bytes
/// (``MachOImage/commandView(_:)``) for readers that print every field.

/// `source_version_command` (LC_SOURCE_VERSION): `A.B.C.D.E` packed as a24.b10.c10.d10.e10.
package struct SourceVersion: Equatable, Sendable {
    package let version: UInt64

    package init(parsing view: ByteView) throws(MachOError) { version = try view.u64(8) }

    /// The five components, most significant first.
    package var components: [UInt64] {
        [version >> 40, (version >> 30) & 0x3ff, (version >> 20) & 0x3ff, (version >> 10) & 0x3ff, version & 0x3ff]
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
