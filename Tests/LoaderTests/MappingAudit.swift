import TestSupport

/// Proves released launches left nothing mapped (through ``ProcessMaps``).
enum MappingAudit {
    /// The regions among `released` that still overlap a mapping.
    static func leftovers(_ released: [Range<UInt64>]) throws -> [Range<UInt64>] {
        let live = try ProcessMaps.ranges()
        return released.filter { region in live.contains { $0.overlaps(region) } }
    }
}
