import MachOReader

// PLACEHOLDER: replaced by the real renderer.
enum DyldInfoTable {
    static func render(_ image: MachOImage) throws(MachOError) -> String {
        throw MachOError(offset: 0, .unsupported("DyldInfoTable is not written yet"))
    }
}
