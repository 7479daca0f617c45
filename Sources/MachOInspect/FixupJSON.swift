import MachOReader

// TEMPORARY until the decoders land.
enum FixupJSON {
    static func members(_ image: MachOImage, tables: Set<InspectTable>) throws(MachOError) -> [(String, JSONValue)] { [] }
}
