import TestSupport
import Foundation

/// Reads /proc/self/maps to prove released launches left nothing mapped. Checks address
/// ranges rather than a count of lines, so tests running concurrently in the same process
/// (which map and unmap their own launches) cannot disturb it.
enum MappingAudit {
    /// Every mapping of this process as an address range.
    static func mappings() throws -> [Range<UInt64>] {
        try String(contentsOfFile: "/proc/self/maps", encoding: .utf8).split(separator: "\n").compactMap { line in
            let bounds = line.prefix(while: { $0 != " " }).split(separator: "-")
            guard bounds.count == 2, let low = UInt64(bounds[0], radix: 16), let high = UInt64(bounds[1], radix: 16) else { return nil }
            return low..<high
        }
    }

    /// The regions among `released` that still overlap a mapping.
    static func leftovers(_ released: [Range<UInt64>]) throws -> [Range<UInt64>] {
        let live = try mappings()
        return released.filter { region in live.contains { $0.overlaps(region) } }
    }
}
