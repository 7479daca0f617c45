/// An image's sections as its file stores them, found by address: the bytes a section's
/// address range maps to, read without any fixup (rebases not applied, chained pointers
/// not decoded, binds still 0 or their addend). This is how llvm-objdump's
/// `--objc-meta-data` reads metadata: an address means the first non-empty section, in
/// load command order, whose `[addr, addr + size)` holds it, and what lies there is that
/// section's file bytes (`offset + (address - addr)`), clamped to the file (a zero-fill
/// section has none).
public struct FileSections: Sendable {
    /// What an address leads to.
    public struct Place: Sendable {
        public let section: Section
        /// The address's offset in the section.
        public let offset: UInt64
        /// Bytes from the address to the section's end, by its size field.
        public let left: UInt64
        /// The file bytes from the address to the section's end, clamped to the file:
        /// shorter than `left` when the section's range runs past the file (zero-fill).
        public let bytes: ByteView
    }

    public let image: MachOImage
    /// Non-empty sections in load command order.
    private let sections: [Section]
    /// Indices into `sections` sorted by address, when no two of them overlap (the usual
    /// case): lookups are then a binary search; otherwise a scan in load command order.
    private let byAddress: [Int]?

    public init(image: MachOImage) {
        self.image = image
        let sections = image.sections.filter { $0.size != 0 }
        self.sections = sections
        let sorted = sections.indices.sorted { sections[$0].address < sections[$1].address }
        var disjoint = true
        for (previous, next) in zip(sorted, sorted.dropFirst()) {
            let end = sections[previous].address.addingReportingOverflow(sections[previous].size)
            if end.overflow || end.partialValue > sections[next].address { disjoint = false; break }
        }
        byAddress = disjoint ? sorted : nil
    }

    /// The first section holding `address` (nil when none does).
    public func section(containing address: UInt64) -> Section? {
        if let byAddress {
            var low = 0, high = byAddress.count
            while low < high {
                let mid = (low + high) / 2
                if sections[byAddress[mid]].address <= address { low = mid + 1 } else { high = mid }
            }
            guard low > 0 else { return nil }
            let section = sections[byAddress[low - 1]]
            return section.contains(address: address) ? section : nil
        }
        return sections.first { $0.contains(address: address) }
    }

    /// Where `address` leads (nil when no section holds it).
    public func place(_ address: UInt64) -> Place? {
        guard let section = section(containing: address) else { return nil }
        let offset = address - section.address
        let left = section.size - offset
        return Place(section: section, offset: offset, left: left, bytes: contents(of: section, from: offset))
    }

    /// Zero-fill section types (`S_ZEROFILL`, `S_GB_ZEROFILL`, `S_THREAD_LOCAL_ZEROFILL`):
    /// their bytes are not in the file.
    public static let zeroFillTypes: Set<UInt8> = [0x1, 0xc, 0x12]

    /// The file bytes of `section` from `offset` to its end, clamped to the file; none for
    /// a zero-fill section.
    public func contents(of section: Section, from offset: UInt64 = 0) -> ByteView {
        let file = image.view
        let start = UInt64(section.fileOffset).addingReportingOverflow(offset)
        guard !FileSections.zeroFillTypes.contains(section.type), offset < section.size,
              !start.overflow, start.partialValue < UInt64(file.count) else { return ByteView([]) }
        let available = UInt64(file.count) - start.partialValue
        return (try? file.slice(Int(start.partialValue), Int(min(available, section.size - offset)))) ?? ByteView([])
    }

    /// `length` bytes at `address` for a structure parser: nil when no section holds the
    /// address; bytes the section (or the file) does not hold read as 0, and `complete`
    /// says whether all of them were there.
    public func structure(at address: UInt64, length: Int) -> (view: ByteView, complete: Bool, place: Place)? {
        guard let place = place(address) else { return nil }
        let present = min(place.bytes.count, length)
        if present == length, let view = try? place.bytes.slice(0, length) {
            return (view, UInt64(length) <= place.left, place)
        }
        var bytes = (try? place.bytes.bytes(0, present)) ?? []
        bytes.append(contentsOf: repeatElement(0, count: length - present))
        return (ByteView(bytes), false, place)
    }

    /// The string at `address` as `printf("%.*s", left, p)` prints it: up to its NUL, the
    /// section's end or the file's end, whichever comes first; nil when no section holds it.
    public func string(at address: UInt64) -> String? {
        guard let place = place(address) else { return nil }
        let bytes = place.bytes
        let end = ((try? bytes.firstZero(0, bytes.count)) ?? nil) ?? bytes.count
        return (try? bytes.slice(0, end))?.string ?? ""
    }
}
