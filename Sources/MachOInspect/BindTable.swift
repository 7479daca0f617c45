import MachOReader

// PLACEHOLDER: replaced by the real renderer.
enum BindTable {
    static func render(_ image: MachOImage, kind: BindStreamKind) throws(MachOError) -> String {
        throw MachOError(offset: 0, .unsupported("BindTable is not written yet"))
    }
}
