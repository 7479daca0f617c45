import Foundation

/// Writes small, well-formed arm64 Mach-O images at test time, for inputs too large or too
/// hostile to link: `__TEXT` (header, load commands and the linkedit blobs: an exports
/// trie, chained fixups or dyld-info opcodes), an optional `__DATA` segment of whole pages,
/// and the dylib, re-export and rpath commands a test asks for. Every file it writes is
/// accepted by `llvm-objdump-19 --macho --private-headers` (checked by the tests that use it).
package struct MachOBuilder: Sendable {
    /// `MH_EXECUTE` or `MH_DYLIB`.
    package enum FileType: UInt32, Sendable {
        case execute = 2
        case dylib = 6
    }

    /// How a dependency is linked.
    package enum Link: UInt32, Sendable {
        case load = 0xC            // LC_LOAD_DYLIB
        case reexport = 0x8000_001F // LC_REEXPORT_DYLIB
        case weak = 0x8000_0018     // LC_LOAD_WEAK_DYLIB
    }

    /// The `__DATA` segment: `pages` pages of `pageSize` bytes, file-backed, and how its
    /// pointers are fixed up.
    package struct DataSegment: Sendable {
        package var bytes: [UInt8]
        package var fixups: Fixups

        package init(bytes: [UInt8], fixups: Fixups) {
            self.bytes = bytes
            self.fixups = fixups
        }
    }

    /// LC_DYLD_CHAINED_FIXUPS (`DYLD_CHAINED_PTR_64_OFFSET`, plain `DYLD_CHAINED_IMPORT`s)
    /// with `pageStarts` (page_start[] and any chain_starts[] after it, raw) and `imports`
    /// (name and library ordinal), or an LC_DYLD_INFO_ONLY rebase opcode stream.
    package enum Fixups: Sendable {
        case chained(pageSize: UInt16, pageCount: UInt16, pageStarts: [UInt16], imports: [(name: String, ordinal: UInt8)])
        case rebaseOpcodes([UInt8])
    }

    /// Where `__DATA` starts, in the file and from the image's base.
    package static let dataOffset: UInt64 = 0x4000
    static let cpuARM64: UInt32 = 0x0100_000C

    package var fileType: FileType
    package var installName: String?
    package var dependencies: [(link: Link, name: String)] = []
    package var rpaths: [String] = []
    /// One exported symbol and its offset from the image's base (LC_DYLD_EXPORTS_TRIE).
    package var export: (name: String, offset: UInt64)?
    package var data: DataSegment?

    package init(fileType: FileType, installName: String? = nil) {
        self.fileType = fileType
        self.installName = installName
    }

    /// An executable whose one `__DATA` page starts with a chained bind to `symbol`, imported
    /// from its one dependency `dylib` (ordinal 1), linked as `link`.
    package static func executable(binding symbol: String, from dylib: String, _ link: Link) -> MachOBuilder {
        let data = quad(chainedBind(importOrdinal: 0)) + [UInt8](repeating: 0, count: 0x1000 - 8)
        var main = MachOBuilder(fileType: .execute)
        main.dependencies = [(link, dylib)]
        let imports: [(name: String, ordinal: UInt8)] = [(symbol, 1)]
        main.data = .init(bytes: data, fixups: .chained(pageSize: 0x1000, pageCount: 1, pageStarts: [0], imports: imports))
        return main
    }

    /// The image's bytes.
    package func bytes() -> [UInt8] {
        let trie = export.map { Self.exportsTrie(name: $0.name, offset: $0.offset) } ?? []
        var fixupsBlob: [UInt8] = []
        var isChained = false
        if let data {
            switch data.fixups {
            case let .chained(pageSize, pageCount, pageStarts, imports):
                fixupsBlob = Self.chainedFixups(pageSize: pageSize, pageCount: pageCount, pageStarts: pageStarts, imports: imports)
                isChained = true
            case let .rebaseOpcodes(opcodes):
                fixupsBlob = opcodes + [UInt8](repeating: 0, count: (8 - opcodes.count % 8) % 8)
            }
        }
        // Load commands, with the blobs' offsets filled in once the commands' size is known.
        var commands: [[UInt8]] = []
        // With __DATA, each segment holds one section (llvm-objdump names a fixup's section):
        // __TEXT an empty __text after the linkedit blobs, __DATA a __data over all of it.
        var commandsSize = data == nil ? 72 : 2 * 152

        if let installName { commandsSize += Self.dylibCommandSize(installName) }
        for dependency in dependencies { commandsSize += Self.dylibCommandSize(dependency.name) }
        for rpath in rpaths { commandsSize += Self.stringCommandSize(rpath, fixed: 12) }
        if !trie.isEmpty { commandsSize += 16 }
        if data != nil { commandsSize += isChained ? 16 : 48 }
        var cursor = UInt32(32 + commandsSize)
        let trieOffset = cursor
        cursor += UInt32(trie.count)
        let fixupsOffset = cursor
        cursor += UInt32(fixupsBlob.count)
        let textFileSize = UInt64(cursor)
        let textVMSize = data == nil ? (textFileSize + 0xFFF) / 0x1000 * 0x1000 : Self.dataOffset
        precondition(textFileSize <= textVMSize, "the linkedit blobs must fit before __DATA")

        commands.append(Self.segment("__TEXT", vm: 0, vmSize: textVMSize, file: 0, fileSize: textFileSize, protection: 5,
                                     section: data == nil ? nil : ("__text", textFileSize, 0)))
        if let data {
            let size = UInt64(data.bytes.count)
            commands.append(Self.segment("__DATA", vm: Self.dataOffset, vmSize: size, file: Self.dataOffset, fileSize: size, protection: 3,
                                         section: ("__data", 0, size)))
        }
        if let installName { commands.append(Self.dylibCommand(0xD, installName)) }
        for dependency in dependencies { commands.append(Self.dylibCommand(dependency.link.rawValue, dependency.name)) }
        for rpath in rpaths { commands.append(Self.stringCommand(0x8000_001C, rpath, fixed: 12)) }
        if !trie.isEmpty { commands.append(Self.words([0x8000_0033, 16, trieOffset, UInt32(trie.count)])) }
        if data != nil {
            if isChained {
                commands.append(Self.words([0x8000_0034, 16, fixupsOffset, UInt32(fixupsBlob.count)]))
            } else {  // LC_DYLD_INFO_ONLY with only a rebase stream
                commands.append(Self.words([0x8000_0022, 48, fixupsOffset, UInt32(fixupsBlob.count), 0, 0, 0, 0, 0, 0, 0, 0]))
            }
        }
        let flags: UInt32 = 0x4 | 0x80 | (fileType == .execute ? 0x20_0000 : 0)  // DYLDLINK, TWOLEVEL, PIE
        var out = Self.words([0xFEED_FACF, Self.cpuARM64, 0, fileType.rawValue, UInt32(commands.count), UInt32(commandsSize), flags, 0])
        for command in commands { out += command }
        precondition(out.count == 32 + commandsSize)
        out += trie
        out += fixupsBlob
        if let data {
            out += [UInt8](repeating: 0, count: Int(Self.dataOffset) - out.count)
            out += data.bytes
        }
        return out
    }

    /// Writes the image to `path`.
    package func write(to path: String) throws {
        try Data(bytes()).write(to: URL(fileURLWithPath: path))
    }

    // MARK: - Pieces

    static func words(_ values: [UInt32]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(values.count * 4)
        for value in values { for shift in stride(from: 0, to: 32, by: 8) { out.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) } }
        return out
    }

    static func quad(_ value: UInt64) -> [UInt8] {
        words([UInt32(truncatingIfNeeded: value), UInt32(truncatingIfNeeded: value >> 32)])
    }

    static func uleb(_ value: UInt64) -> [UInt8] {
        var value = value
        var out: [UInt8] = []
        repeat {
            var byte = UInt8(value & 0x7F)
            value >>= 7
            if value != 0 { byte |= 0x80 }
            out.append(byte)
        } while value != 0
        return out
    }

    /// An LC_SEGMENT_64, with one section `size` bytes long at `offset` in it when asked for.
    static func segment(
        _ name: String, vm: UInt64, vmSize: UInt64, file: UInt64, fileSize: UInt64, protection: UInt32,
        section: (name: String, offset: UInt64, size: UInt64)? = nil
    ) -> [UInt8] {
        func name16(_ text: String) -> [UInt8] { Array(text.utf8) + [UInt8](repeating: 0, count: 16 - text.utf8.count) }
        var out = words([0x19, section == nil ? 72 : 152]) + name16(name)
        for value in [vm, vmSize, file, fileSize] { out += quad(value) }
        out += words([protection, protection, section == nil ? 0 : 1, 0])
        if let section {
            out += name16(section.name) + name16(name) + quad(vm + section.offset) + quad(section.size)
            out += words([UInt32(file + section.offset), 3, 0, 0, 0, 0, 0, 0])
        }
        return out
    }

    static func stringCommandSize(_ string: String, fixed: Int) -> Int {
        (fixed + string.utf8.count + 1 + 7) / 8 * 8
    }

    static func stringCommand(_ command: UInt32, _ string: String, fixed: Int) -> [UInt8] {
        let size = stringCommandSize(string, fixed: fixed)
        var out = words([command, UInt32(size), UInt32(fixed)])
        out += [UInt8](repeating: 0, count: fixed - 12)
        out += Array(string.utf8)
        out += [UInt8](repeating: 0, count: size - out.count)
        return out
    }

    static func dylibCommandSize(_ name: String) -> Int { stringCommandSize(name, fixed: 24) }

    static func dylibCommand(_ command: UInt32, _ name: String) -> [UInt8] {
        var out = stringCommand(command, name, fixed: 24)
        // timestamp 2, current and compatibility version 1.0.0
        out.replaceSubrange(12..<24, with: words([2, 0x1_0000, 0x1_0000]))
        return out
    }

    /// A trie holding one regular export.
    static func exportsTrie(name: String, offset: UInt64) -> [UInt8] {
        let edge = Array(name.utf8) + [0]
        precondition(edge.count + 3 < 0x80, "one-byte child offset")
        let childOffset = UInt64(2 + edge.count + 1)
        var out: [UInt8] = [0, 1] + edge + uleb(childOffset)
        let info = uleb(0) + uleb(offset)
        out += uleb(UInt64(info.count)) + info + [0]
        while out.count % 8 != 0 { out.append(0) }
        return out
    }

    /// An LC_DYLD_CHAINED_FIXUPS blob for `__TEXT` and `__DATA`, `__DATA` at `dataOffset`.
    static func chainedFixups(pageSize: UInt16, pageCount: UInt16, pageStarts: [UInt16], imports: [(name: String, ordinal: UInt8)]) -> [UInt8] {
        let startsOffset: UInt32 = 32
        let segmentInfoOffset: UInt32 = 16  // from the starts in image: seg_count and two offsets, padded
        let infoSize = UInt32(22 + 2 * pageStarts.count)
        let importsOffset = (startsOffset + segmentInfoOffset + infoSize + 3) / 4 * 4
        let symbolsOffset = importsOffset + 4 * UInt32(imports.count)
        var out = words([0, startsOffset, importsOffset, symbolsOffset, UInt32(imports.count), 1, 0])
        out += [0, 0, 0, 0]
        out += words([2, 0, segmentInfoOffset, 0])
        out += words([infoSize]) + [UInt8(truncatingIfNeeded: pageSize), UInt8(pageSize >> 8), 6, 0]
        out += quad(dataOffset) + words([0]) + [UInt8(truncatingIfNeeded: pageCount), UInt8(pageCount >> 8)]
        for start in pageStarts { out += [UInt8(truncatingIfNeeded: start), UInt8(start >> 8)] }
        while out.count < Int(importsOffset) { out.append(0) }
        var names: [UInt8] = [0]
        for entry in imports {
            out += words([UInt32(entry.ordinal) | UInt32(names.count) << 9])
            names += Array(entry.name.utf8) + [0]
        }
        out += names
        while out.count % 8 != 0 { out.append(0) }
        return out
    }

    /// A `DYLD_CHAINED_PTR_64_OFFSET` bind of import `ordinal`, `next` strides (4 bytes) on.
    package static func chainedBind(importOrdinal: UInt32, next: UInt64 = 0) -> UInt64 {
        1 << 63 | next << 51 | UInt64(importOrdinal)
    }
}
