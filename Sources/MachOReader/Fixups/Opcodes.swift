/// `REBASE_OPCODE_*`: the high nibble of a rebase opcode byte (the low nibble is its immediate).
public enum RebaseOpcode: UInt8, CaseIterable, Sendable {
    case done = 0x00
    case setTypeImm = 0x10
    case setSegmentAndOffsetULEB = 0x20
    case addAddrULEB = 0x30
    case addAddrImmScaled = 0x40
    case doRebaseImmTimes = 0x50
    case doRebaseULEBTimes = 0x60
    case doRebaseAddAddrULEB = 0x70
    case doRebaseULEBTimesSkippingULEB = 0x80

    /// The opcode's name in `mach-o/loader.h`, for error messages.
    public var name: String {
        switch self {
        case .done: "REBASE_OPCODE_DONE"
        case .setTypeImm: "REBASE_OPCODE_SET_TYPE_IMM"
        case .setSegmentAndOffsetULEB: "REBASE_OPCODE_SET_SEGMENT_AND_OFFSET_ULEB"
        case .addAddrULEB: "REBASE_OPCODE_ADD_ADDR_ULEB"
        case .addAddrImmScaled: "REBASE_OPCODE_ADD_ADDR_IMM_SCALED"
        case .doRebaseImmTimes: "REBASE_OPCODE_DO_REBASE_IMM_TIMES"
        case .doRebaseULEBTimes: "REBASE_OPCODE_DO_REBASE_ULEB_TIMES"
        case .doRebaseAddAddrULEB: "REBASE_OPCODE_DO_REBASE_ADD_ADDR_ULEB"
        case .doRebaseULEBTimesSkippingULEB: "REBASE_OPCODE_DO_REBASE_ULEB_TIMES_SKIPPING_ULEB"
        }
    }
}

/// `BIND_OPCODE_*`: the high nibble of a bind opcode byte (the low nibble is its immediate).
public enum BindOpcode: UInt8, CaseIterable, Sendable {
    case done = 0x00
    case setDylibOrdinalImm = 0x10
    case setDylibOrdinalULEB = 0x20
    case setDylibSpecialImm = 0x30
    case setSymbolTrailingFlagsImm = 0x40
    case setTypeImm = 0x50
    case setAddendSLEB = 0x60
    case setSegmentAndOffsetULEB = 0x70
    case addAddrULEB = 0x80
    case doBind = 0x90
    case doBindAddAddrULEB = 0xa0
    case doBindAddAddrImmScaled = 0xb0
    case doBindULEBTimesSkippingULEB = 0xc0
    /// arm64e's threaded binds (not supported).
    case threaded = 0xd0

    /// The opcode's name in `mach-o/loader.h`, for error messages.
    public var name: String {
        switch self {
        case .done: "BIND_OPCODE_DONE"
        case .setDylibOrdinalImm: "BIND_OPCODE_SET_DYLIB_ORDINAL_IMM"
        case .setDylibOrdinalULEB: "BIND_OPCODE_SET_DYLIB_ORDINAL_ULEB"
        case .setDylibSpecialImm: "BIND_OPCODE_SET_DYLIB_SPECIAL_IMM"
        case .setSymbolTrailingFlagsImm: "BIND_OPCODE_SET_SYMBOL_TRAILING_FLAGS_IMM"
        case .setTypeImm: "BIND_OPCODE_SET_TYPE_IMM"
        case .setAddendSLEB: "BIND_OPCODE_SET_ADDEND_SLEB"
        case .setSegmentAndOffsetULEB: "BIND_OPCODE_SET_SEGMENT_AND_OFFSET_ULEB"
        case .addAddrULEB: "BIND_OPCODE_ADD_ADDR_ULEB"
        case .doBind: "BIND_OPCODE_DO_BIND"
        case .doBindAddAddrULEB: "BIND_OPCODE_DO_BIND_ADD_ADDR_ULEB"
        case .doBindAddAddrImmScaled: "BIND_OPCODE_DO_BIND_ADD_ADDR_IMM_SCALED"
        case .doBindULEBTimesSkippingULEB: "BIND_OPCODE_DO_BIND_ULEB_TIMES_SKIPPING_ULEB"
        case .threaded: "BIND_OPCODE_THREADED"
        }
    }
}
