import MachOReader

// PLACEHOLDER: replaced by the real renderer.
enum ChainedFixupsTable {
    static func render(_ image: MachOImage) throws(MachOError) -> String {
        throw MachOError(offset: 0, .unsupported("ChainedFixupsTable is not written yet"))
    }
}
