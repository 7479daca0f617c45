import MachOReader

// PLACEHOLDER: replaced by the real renderer.
enum RebaseTable {
    static func render(_ image: MachOImage) throws(MachOError) -> String {
        throw MachOError(offset: 0, .unsupported("RebaseTable is not written yet"))
    }
}
