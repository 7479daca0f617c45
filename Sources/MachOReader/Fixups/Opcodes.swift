/// `REBASE_OPCODE_*`: the high nibble of a rebase opcode byte (the low nibble is its immediate).
package enum RebaseOpcode: UInt8, CaseIterable, Sendable {
    case done = 0x00, setTypeImm = 0x10, setSegmentAndOffsetULEB = 0x20, addAddrULEB = 0x30, addAddrImmScaled = 0x40
    case doRebaseImmTimes = 0x50, doRebaseULEBTimes = 0x60, doRebaseAddAddrULEB = 0x70, doRebaseULEBTimesSkippingULEB = 0x80

    /// The opcode's name in `mach-o/loader.h`, for error messages (indexed by the high nibble).
    package var name: String { "REBASE_OPCODE_" + Self.names[Int(rawValue >> 4)] }
    private static let names = [
        "DONE", "SET_TYPE_IMM", "SET_SEGMENT_AND_OFFSET_ULEB", "ADD_ADDR_ULEB", "ADD_ADDR_IMM_SCALED", "DO_REBASE_IMM_TIMES",
        "DO_REBASE_ULEB_TIMES", "DO_REBASE_ADD_ADDR_ULEB", "DO_REBASE_ULEB_TIMES_SKIPPING_ULEB",
    ]
}

/// `BIND_OPCODE_*`: the high nibble of a bind opcode byte (the low nibble is its immediate).
package enum BindOpcode: UInt8, CaseIterable, Sendable {
    case done = 0x00, setDylibOrdinalImm = 0x10, setDylibOrdinalULEB = 0x20, setDylibSpecialImm = 0x30
    case setSymbolTrailingFlagsImm = 0x40, setTypeImm = 0x50, setAddendSLEB = 0x60, setSegmentAndOffsetULEB = 0x70
    case addAddrULEB = 0x80, doBind = 0x90, doBindAddAddrULEB = 0xa0, doBindAddAddrImmScaled = 0xb0
    case doBindULEBTimesSkippingULEB = 0xc0
    /// arm64e's threaded binds (not supported).
    case threaded = 0xd0

    /// The opcode's name in `mach-o/loader.h`, for error messages (indexed by the high nibble).
    package var name: String { "BIND_OPCODE_" + Self.names[Int(rawValue >> 4)] }
    private static let names = [
        "DONE", "SET_DYLIB_ORDINAL_IMM", "SET_DYLIB_ORDINAL_ULEB", "SET_DYLIB_SPECIAL_IMM", "SET_SYMBOL_TRAILING_FLAGS_IMM",
        "SET_TYPE_IMM", "SET_ADDEND_SLEB", "SET_SEGMENT_AND_OFFSET_ULEB", "ADD_ADDR_ULEB", "DO_BIND", "DO_BIND_ADD_ADDR_ULEB",
        "DO_BIND_ADD_ADDR_IMM_SCALED", "DO_BIND_ULEB_TIMES_SKIPPING_ULEB", "THREADED",
    ]
}
