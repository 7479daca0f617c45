import ClosureBuild
import ClosureFormat
import MachOReader
import SharedCache

/// An image's load commands rewritten for its place in the cache, as Apple's builder leaves
/// them: segments and sections at their cache addresses and file offsets, `__LINKEDIT` data
/// at its cache file offsets, the fixup streams gone (they are applied), `MH_DYLIB_IN_CACHE`.
enum CacheImageHeader {
    static let dylibInCache: UInt32 = 0x8000_0000
    static let chainedFixups: UInt32 = 0x8000_0034

    /// Rewrites `image`'s header, which lies at `offset` in `data`, for the cache `address` and
    /// `fileOffset` its first byte has.
    static func rewrite(_ image: MachOImage, at offset: Int, in data: inout [UInt8], address: UInt64, fileOffset: UInt64) throws(MachOError) {
        let preferred = image.preferredLoadAddress
        let segments = image.segments
        // A file offset of the image's own file, where the cache holds that byte.
        func file(_ original: UInt64) -> UInt64? {
            for segment in segments where segment.fileSize > 0 && original >= segment.fileOffset && original - segment.fileOffset < segment.fileSize {
                return fileOffset + (segment.vmAddress - preferred) + (original - segment.fileOffset)
            }
            return nil
        }
        func get32(_ at: Int) -> UInt32 { (0..<4).reduce(UInt32(0)) { $0 | UInt32(data[offset + at + $1]) << (8 * UInt32($1)) } }
        func put32(_ value: UInt32, _ at: Int) { for byte in 0..<4 { data[offset + at + byte] = UInt8(truncatingIfNeeded: value >> (8 * UInt32(byte))) } }
        func get64(_ at: Int) -> UInt64 { data.littleEndianWord(offset + at) }
        func put64(_ value: UInt64, _ at: Int) { PrelinkBuilder.store(value, at: offset + at, in: &data) }
        func moveOffset32(_ at: Int, size sizeAt: Int? = nil) {
            let old = get32(at)
            guard old != 0, sizeAt.map({ get32($0) != 0 }) ?? true else { return }
            put32(UInt32(clamping: file(UInt64(old)) ?? 0), at)
        }
        var removed: [(offset: Int, size: Int)] = []
        for command in image.loadCommands {
            let at = command.offset
            switch command.type.rawValue {
            case 0x19:  // LC_SEGMENT_64
                let vmaddr = get64(at + 24)
                put64(address + (vmaddr - preferred), at + 24)
                if get64(at + 48) > 0 { put64(file(get64(at + 40)) ?? 0, at + 40) }
                for section in 0..<Int(get32(at + 64)) {
                    let s = at + 72 + section * 80
                    put64(address + (get64(s + 32) - preferred), s + 32)
                    moveOffset32(s + 48)
                }
            case 0x2:  // LC_SYMTAB
                moveOffset32(at + 8); moveOffset32(at + 16)
            case 0xB:  // LC_DYSYMTAB
                for field in [32, 40, 48, 56, 64, 72] { moveOffset32(at + field) }
            case 0x22, 0x8000_0022:  // LC_DYLD_INFO(_ONLY): rebases and binds are applied
                for field in [8, 12, 16, 20, 24, 28, 32, 36] { put32(0, at + field) }
                moveOffset32(at + 40, size: at + 44)
            case chainedFixups:
                removed.append((at, Int(command.size)))
            case 0x1D, 0x1E, 0x26, 0x29, 0x2B, 0x2E, 0x8000_0033:  // __LINKEDIT data
                moveOffset32(at + 8, size: at + 12)
            default:
                break
            }
        }
        put32(get32(24) | dylibInCache, 24)
        // Commands removed: the later ones move up, the count and size shrink.
        let end = 32 + Int(get32(20))
        for command in removed.reversed() {
            let tail = Array(data[(offset + command.offset + command.size)..<(offset + end)])
            data.replaceSubrange((offset + command.offset)..<(offset + end - command.size), with: tail)
            for byte in (end - command.size)..<end { data[offset + byte] = 0 }
            put32(get32(16) - 1, 16)
            put32(get32(20) - UInt32(command.size), 20)
        }
    }
}
