import MachOReader

/// A symbol name as the bytes of the image that names it (a bind opcode stream, a chained
/// imports pool): compared and hashed in place, so looking a name up makes no string.
struct SymbolName: Hashable {
    let bytes: ByteView

    static func == (lhs: SymbolName, rhs: SymbolName) -> Bool { lhs.bytes.sameBytes(as: rhs.bytes) }

    func hash(into hasher: inout Hasher) { bytes.hashBytes(into: &hasher) }
}
