import LaunchPlan

/// The dynamic section of an x86_64 ELF file, enough for the glibc side of the bench: how
/// many relocations glibc's loader applies, and the DF_1_PIE flag that stops `dlopen`.
struct ELFDynamic {
    static let flags1Tag: Int64 = 0x6fff_fffb
    static let pieFlag: UInt64 = 0x0800_0000
    static let relaSizeTag: Int64 = 8, relaEntrySizeTag: Int64 = 9, pltRelocationSizeTag: Int64 = 2

    /// One entry: its tag, value, and where its value lies in the file.
    struct Entry {
        var tag: Int64
        var value: UInt64
        var valueOffset: Int
    }

    let entries: [Entry]

    /// Parses the PT_DYNAMIC segment of a 64-bit little-endian ELF file.
    init(_ bytes: [UInt8], path: String) throws(CommandFailure) {
        func word(_ offset: Int, _ size: Int) throws(CommandFailure) -> UInt64 {
            guard offset >= 0, size <= 8, offset <= bytes.count - size else { throw .failed("\(path): truncated ELF at offset \(offset)") }
            var value: UInt64 = 0
            for index in (0..<size).reversed() { value = value << 8 | UInt64(bytes[offset + index]) }
            return value
        }
        guard bytes.count >= 64, bytes[0..<4].elementsEqual([0x7f, 0x45, 0x4c, 0x46]), bytes[4] == 2, bytes[5] == 1 else {
            throw .failed("\(path): not a 64-bit little-endian ELF file")
        }
        let programHeaders = Int(clamping: try word(0x20, 8))
        let headerSize = Int(try word(0x36, 2)), headerCount = Int(try word(0x38, 2))
        var found: [Entry] = []
        for index in 0..<headerCount {
            let header = programHeaders &+ index &* headerSize
            guard try word(header, 4) == 2 else { continue }  // PT_DYNAMIC
            let offset = Int(clamping: try word(header + 8, 8)), size = Int(clamping: try word(header + 32, 8))
            var entry = offset
            while entry <= offset &+ size &- 16 {
                let tag = Int64(bitPattern: try word(entry, 8))
                if tag == 0 { break }
                found.append(Entry(tag: tag, value: try word(entry + 8, 8), valueOffset: entry + 8))
                entry += 16
            }
        }
        entries = found
    }

    func value(_ tag: Int64) -> UInt64? { entries.first { $0.tag == tag }?.value }

    /// The relocations glibc applies at load (RTLD_NOW): DT_RELA plus DT_JMPREL entries.
    var relocationCount: Int {
        let entrySize = max(value(ELFDynamic.relaEntrySizeTag) ?? 24, 1)
        return Int((value(ELFDynamic.relaSizeTag) ?? 0) / entrySize + (value(ELFDynamic.pltRelocationSizeTag) ?? 0) / 24)
    }

    /// `bytes` with DF_1_PIE cleared, so glibc's `dlopen` accepts the twin's executable as
    /// the root of the load (it is position-independent code either way).
    static func clearingPIE(_ bytes: [UInt8], path: String) throws(CommandFailure) -> [UInt8] {
        var patched = bytes
        for entry in try ELFDynamic(bytes, path: path).entries where entry.tag == flags1Tag {
            let cleared = entry.value & ~pieFlag
            for index in 0..<8 { patched[entry.valueOffset + index] = UInt8(truncatingIfNeeded: cleared >> (8 * UInt64(index))) }
        }
        return patched
    }
}
