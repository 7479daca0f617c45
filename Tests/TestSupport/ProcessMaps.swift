import Foundation

/// This process's mappings, from `/proc/self/maps` read to its end (the kernel reports its
/// size as 0, so it is read until EOF, however many mappings concurrent tests hold). Tests
/// check address ranges rather than counts, so launches of other tests cannot disturb them.
public enum ProcessMaps {
    /// Every mapping as an address range.
    public static func ranges() throws -> [Range<UInt64>] {
        guard let file = FileHandle(forReadingAtPath: "/proc/self/maps") else { throw FixtureError("cannot open /proc/self/maps") }
        defer { try? file.close() }
        let text = String(decoding: try file.readToEnd() ?? Data(), as: UTF8.self)
        return text.split(separator: "\n").compactMap { line in
            let bounds = line.prefix(while: { $0 != " " }).split(separator: "-")
            guard bounds.count == 2, let low = UInt64(bounds[0], radix: 16), let high = UInt64(bounds[1], radix: 16) else { return nil }
            return low..<high
        }
    }

    /// The protection (`r`, `w`, `x` or `-` each, as maps prints it) of every page in
    /// `range`, in order; nil for a page nothing maps.
    public static func pageProtections(in range: Range<UInt64>, pageSize: UInt64) throws -> [String?] {
        guard let file = FileHandle(forReadingAtPath: "/proc/self/maps") else { throw FixtureError("cannot open /proc/self/maps") }
        defer { try? file.close() }
        var pages = [String?](repeating: nil, count: Int((range.upperBound - range.lowerBound) / pageSize))
        for line in String(decoding: try file.readToEnd() ?? Data(), as: UTF8.self).split(separator: "\n") {
            let fields = line.split(separator: " ", maxSplits: 2)
            let bounds = fields.first?.split(separator: "-") ?? []
            guard fields.count >= 2, bounds.count == 2, let low = UInt64(bounds[0], radix: 16), let high = UInt64(bounds[1], radix: 16),
                  low < range.upperBound, high > range.lowerBound else { continue }
            for page in stride(from: max(low, range.lowerBound), to: min(high, range.upperBound), by: Int(pageSize)) {
                pages[Int((page - range.lowerBound) / pageSize)] = String(fields[1].prefix(3))
            }
        }
        return pages
    }

    /// Whether anything is mapped in `range`.
    public static func anyMapping(in range: Range<UInt64>) throws -> Bool {
        try ranges().contains { $0.overlaps(range) }
    }
}
