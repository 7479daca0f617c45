import MachOReader
// TEMPORARY until the decoders land.
public enum InspectStatistics {
    public static func render(path: String, bytes: [UInt8], arch: ArchSelection) throws(MachOError) -> String { "" }
}
