import Foundation

/// This process's mappings, from `/proc/self/maps` read to its end (the kernel reports its
/// size as 0, so it is read until EOF, however many mappings concurrent tests hold). Tests
/// check address ranges rather than counts, so launches of other tests cannot disturb them.
package enum ProcessMaps {
    /// One mapping: its address range and its protection (`r`, `w`, `x` or `-` each, as
    /// maps prints it).
    package struct Mapping {
        package let range: Range<UInt64>
        package let protection: String
    }

    /// Every mapping, in address order.
    package static func mappings() throws -> [Mapping] {
        guard let file = FileHandle(forReadingAtPath: "/proc/self/maps") else { throw FixtureError("cannot open /proc/self/maps") }
        defer { try? file.close() }
        let text = String(decoding: try file.readToEnd() ?? Data(), as: UTF8.self)
        return text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ", maxSplits: 2)
            let bounds = fields.first?.split(separator: "-") ?? []
            guard fields.count >= 2, bounds.count == 2, let low = UInt64(bounds[0], radix: 16), let high = UInt64(bounds[1], radix: 16),
                  low <= high else { return nil }
            return Mapping(range: low..<high, protection: String(fields[1].prefix(3)))
        }
    }

    /// Every mapping as an address range.
    package static func ranges() throws -> [Range<UInt64>] {
        try mappings().map(\.range)
    }

    /// The protection of every page in `range`, in order; nil for a page nothing maps.
    package static func pageProtections(in range: Range<UInt64>, pageSize: UInt64) throws -> [String?] {
        var pages = [String?](repeating: nil, count: Int((range.upperBound - range.lowerBound) / pageSize))
        for mapping in try mappings() where mapping.range.overlaps(range) {
            let start = max(mapping.range.lowerBound, range.lowerBound), end = min(mapping.range.upperBound, range.upperBound)
            for page in stride(from: start, to: end, by: Int(pageSize)) {
                pages[Int((page - range.lowerBound) / pageSize)] = mapping.protection
            }
        }
        return pages
    }

    /// Whether anything is mapped in `range`.
    package static func anyMapping(in range: Range<UInt64>) throws -> Bool {
        try ranges().contains { $0.overlaps(range) }
    }
}
