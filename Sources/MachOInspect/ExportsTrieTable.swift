import MachOReader

// PLACEHOLDER: replaced by the real renderer.
enum ExportsTrieTable {
    static func render(_ image: MachOImage) throws(MachOError) -> String {
        throw MachOError(offset: 0, .unsupported("ExportsTrieTable is not written yet"))
    }
}
