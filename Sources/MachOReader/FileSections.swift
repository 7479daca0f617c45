/// An image's sections as its file stores them, found by address: the bytes a section's
/// address range maps to, read without any fixup (rebases not applied, chained pointers
/// not decoded, binds still 0 or their addend). This is how llvm-objdump's
/// `--objc-meta-data` reads metadata: an address means the first non-empty section, in
/// load command order, whose `[addr, addr + size)` holds it, and what lies there is that
/// section's file bytes (`offset + (address - addr)`), clamped to the file (a zero-fill
/// section has none).
package struct FileSections: Sendable {
    /// What an address leads to.
    package struct Place: Sendable {
        package let section: Section
        /// The address's offset in the section.
        package let offset: UInt64
        /// Bytes from the address to the section's end, by its size field.
        package let left: UInt64
        /// The file bytes from the address to the section's end, clamped to the file:
        /// shorter than `left` when the section's range runs past the file (zero-fill).
        package let bytes: ByteView
    }

    package let image: MachOImage
    /// Non-empty sections in load command order.
    private let sections: [Section]
    /// Disjoint address ranges sorted by start, each with the index of the first section
    /// (in load command order) covering it: built once in O(n log n), so a lookup is a
    /// binary search however the sections overlap.
    private let ranges: [(start: UInt64, end: UInt64, section: Int)]

    package init(image: MachOImage) {
        self.image = image
        let sections = image.sections.filter { $0.size != 0 }
        self.sections = sections
        ranges = FileSections.firstCovering(sections)
    }

    /// The sweep behind ``ranges``: at each boundary the covering section with the lowest
    /// index (a min-heap on index, sections whose range has ended dropped when they surface).
    static func firstCovering(_ sections: [Section]) -> [(start: UInt64, end: UInt64, section: Int)] {
        func end(_ section: Section) -> UInt64 {
            let sum = section.address.addingReportingOverflow(section.size)
            return sum.overflow ? UInt64.max : sum.partialValue
        }
        var boundaries = Set<UInt64>()
        for section in sections {
            boundaries.insert(section.address)
            boundaries.insert(end(section))
        }
        let points = boundaries.sorted()
        let byStart = sections.indices.sorted { sections[$0].address < sections[$1].address }
        var heap = IndexHeap()
        var next = 0
        var ranges: [(start: UInt64, end: UInt64, section: Int)] = []
        for (low, high) in zip(points, points.dropFirst()) {
            while next < byStart.count, sections[byStart[next]].address <= low {
                heap.push(byStart[next])
                next += 1
            }
            while let top = heap.top, end(sections[top]) <= low { heap.pop() }
            guard let winner = heap.top else { continue }
            if let last = ranges.last, last.end == low, last.section == winner {
                ranges[ranges.count - 1].end = high
            } else {
                ranges.append((low, high, winner))
            }
        }
        return ranges
    }

    /// The first section holding `address` (nil when none does).
    package func section(containing address: UInt64) -> Section? {
        let after = ranges.partitionPoint { $0.start <= address }
        guard after > 0 else { return nil }
        let range = ranges[after - 1]
        let section = sections[range.section]
        return address < range.end && section.contains(address: address) ? section : nil
    }

    /// Where `address` leads (nil when no section holds it).
    package func place(_ address: UInt64) -> Place? {
        guard let section = section(containing: address) else { return nil }
        let offset = address - section.address
        let left = section.size - offset
        return Place(section: section, offset: offset, left: left, bytes: contents(of: section, from: offset))
    }

    /// Zero-fill section types (`S_ZEROFILL`, `S_GB_ZEROFILL`, `S_THREAD_LOCAL_ZEROFILL`):
    /// their bytes are not in the file.
    package static let zeroFillTypes: Set<UInt8> = [0x1, 0xc, 0x12]

    /// The file bytes of `section` from `offset` to its end, clamped to the file; none for
    /// a zero-fill section. With `pastEnd`, at least that many bytes when the file holds
    /// them, read on past the section's end.
    package func contents(of section: Section, from offset: UInt64 = 0, pastEnd: UInt64 = 0) -> ByteView {
        let file = image.view
        let start = UInt64(section.fileOffset).addingReportingOverflow(offset)
        guard !FileSections.zeroFillTypes.contains(section.type), offset < section.size,
              !start.overflow, start.partialValue < UInt64(file.count) else { return ByteView([]) }
        let available = UInt64(file.count) - start.partialValue
        let wanted = max(section.size - offset, pastEnd)
        return (try? file.slice(Int(start.partialValue), Int(min(available, wanted)))) ?? ByteView([])
    }

    /// `length` bytes at `address` for a structure parser: nil when no section holds the
    /// address; bytes the section (or the file) does not hold read as 0, and `complete`
    /// says whether all of them were there.
    package func structure(at address: UInt64, length: Int) -> (view: ByteView, complete: Bool, place: Place)? {
        guard let place = place(address) else { return nil }
        let present = min(place.bytes.count, length)
        if present == length, let view = try? place.bytes.slice(0, length) { return (view, UInt64(length) <= place.left, place) }
        var bytes = (try? place.bytes.bytes(0, present)) ?? []
        bytes.append(contentsOf: repeatElement(0, count: length - present))
        return (ByteView(bytes), false, place)
    }

    /// The string at `address` as `printf("%.*s", left, p)` prints it: up to its NUL, the
    /// section's end or the file's end, whichever comes first; nil when no section holds it.
    package func string(at address: UInt64) -> String? {
        guard let place = place(address) else { return nil }
        let bytes = place.bytes
        let end = ((try? bytes.firstZero(0, bytes.count)) ?? nil) ?? bytes.count
        return (try? bytes.slice(0, end))?.string ?? ""
    }
}

/// A binary min-heap of section indices.
struct IndexHeap {
    private var items: [Int] = []

    var top: Int? { items.first }

    mutating func push(_ value: Int) {
        items.append(value)
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard items[child] < items[parent] else { break }
            items.swapAt(child, parent)
            child = parent
        }
    }

    mutating func pop() {
        guard !items.isEmpty else { return }
        items.swapAt(0, items.count - 1)
        items.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < items.count, items[left] < items[smallest] { smallest = left }
            if right < items.count, items[right] < items[smallest] { smallest = right }
            guard smallest != parent else { return }
            items.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
