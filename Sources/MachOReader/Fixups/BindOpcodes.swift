/// Which of the three dyld-info bind streams a bind comes from.
package enum BindStreamKind: String, Sendable, CaseIterable {
    case regular, lazy, weak
}

/// `BIND_TYPE_*`: the values and meanings of `REBASE_TYPE_*`.
package typealias BindType = RebaseType

/// `BIND_SYMBOL_FLAGS_*`: the flags set with a bind's symbol name.
package struct BindSymbolFlags: OptionSet, Hashable, Sendable {
    package let rawValue: UInt8
    package init(rawValue: UInt8) { self.rawValue = rawValue }

    /// `BIND_SYMBOL_FLAGS_WEAK_IMPORT`: a missing symbol binds to 0 instead of failing.
    package static let weakImport = BindSymbolFlags(rawValue: 0x1)
    /// `BIND_SYMBOL_FLAGS_NON_WEAK_DEFINITION`: in the weak-bind stream, this image has a
    /// strong definition of the symbol that overrides weak definitions elsewhere.
    package static let nonWeakDefinition = BindSymbolFlags(rawValue: 0x8)
}

/// One entry of a dyld-info bind, lazy-bind or weak-bind opcode stream: the address of
/// `symbolName`, looked up as `libraryOrdinal` says, plus `addend`, goes at `location`.
///
/// A weak-bind stream also announces strong definitions (``isStrongDefinition``): those name
/// a symbol and have no location.
package struct BindFixup: Hashable, Sendable {
    /// `BIND_SPECIAL_DYLIB_SELF`: the symbol is looked up in this image.
    package static let ordinalSelf = 0
    /// `BIND_SPECIAL_DYLIB_MAIN_EXECUTABLE`.
    package static let ordinalMainExecutable = -1
    /// `BIND_SPECIAL_DYLIB_FLAT_LOOKUP`: every loaded image, in load order.
    package static let ordinalFlatLookup = -2
    /// `BIND_SPECIAL_DYLIB_WEAK_LOOKUP`: weak coalescing; every weak-bind entry has it.
    package static let ordinalWeakLookup = -3

    package let stream: BindStreamKind
    /// Where the bound address goes; nil only for a strong definition.
    package let location: FixupLocation?
    /// The type in force (0 when a regular or weak stream never set one; lazy binds are pointers).
    package let type: BindType
    /// 1...N for the image's dependencies (N = `dependencies[N - 1]`), or one of the special
    /// ordinals, 0 and below.
    package let libraryOrdinal: Int, symbolName: String, flags: BindSymbolFlags, addend: Int64

    /// A weak-bind stream's note that this image strongly defines `symbolName`.
    package var isStrongDefinition: Bool { location == nil }

    package var segmentIndex: Int? { location?.segmentIndex }
    package var segmentOffset: UInt64? { location?.segmentOffset }
    package var address: UInt64? { location?.address }
}

/// One entry of a bind opcode stream as ``BindOpcodeDecoder/nextEntry()`` hands it out:
/// a ``BindFixup`` whose symbol name is still the bytes of the stream.
package struct BindOpcodeEntry: Sendable {
    /// Where the bound address goes; nil only for a strong definition.
    package let location: FixupLocation?, type: BindType, libraryOrdinal: Int
    /// The name's bytes in the stream (NUL excluded).
    package let symbolName: ByteView, flags: BindSymbolFlags, addend: Int64
}

/// Decodes a bind, lazy-bind or weak-bind opcode stream one entry at a time.
///
/// Every ``BindOpcode`` but `BIND_OPCODE_THREADED` (arm64e, refused as unsupported) is
/// understood. Stream rules follow llvm's reader: in the lazy stream `DONE` ends one
/// entry and the stream ends only when no non-zero byte follows; the lazy stream allows only
/// `DO_BIND`; the weak stream sets no library ordinals. A stream may end without `DONE`.
/// Locations are checked as in ``RebaseOpcodeDecoder``; a repeat count of 0 binds nothing,
/// as in dyld. The weak-lookup ordinal (-3) is accepted (llvm-objdump 19 refuses it).
package struct BindOpcodeDecoder: Sendable {
    package let stream: BindStreamKind
    private var opcodes: OpcodeStream
    private let libraryCount: Int
    /// Window position of the last non-zero byte (lazy streams: where DONE really ends).
    private let lastNonZeroPosition: Int

    private var type: BindType, libraryOrdinal: Int?, symbolName: ByteView?
    /// `symbolName` as a string, made once per name for ``next()``.
    private var symbolNameString: String?
    private var flags = BindSymbolFlags()
    private var addend: Int64 = 0

    /// A decoder over one of the image's own bind streams (empty without LC_DYLD_INFO).
    package init(_ image: MachOImage, stream: BindStreamKind) throws(MachOError) {
        let opcodes = try image.dyldInfoStream(stream == .regular ? \.bind : stream == .lazy ? \.lazyBind : \.weakBind)
        self.init(opcodes: opcodes, stream: stream, image: image)
    }

    /// A decoder over `opcodes`, read as a `stream` stream of `image`.
    package init(opcodes: ByteView, stream: BindStreamKind, image: MachOImage) {
        self.stream = stream
        self.opcodes = OpcodeStream(opcodes, image: image)
        libraryCount = image.dependencies.count
        var last = opcodes.count - 1
        while stream == .lazy, last >= 0, (try? opcodes.u8(last)) == 0 { last -= 1 }
        lastNonZeroPosition = last
        type = stream == .lazy ? .pointer : BindType(rawValue: 0)
    }

    /// The next bind (or strong definition), or nil at the end of the stream.
    package mutating func next() throws(MachOError) -> BindFixup? {
        guard let entry = try nextEntry() else { return nil }
        if symbolNameString == nil { symbolNameString = entry.symbolName.string }
        return BindFixup(
            stream: stream, location: entry.location, type: entry.type, libraryOrdinal: entry.libraryOrdinal,
            symbolName: symbolNameString ?? "", flags: entry.flags, addend: entry.addend)
    }

    /// The next bind (or strong definition) with its symbol name left as bytes of the
    /// stream, or nil at the end of the stream: what a loader binds from, with no string made.
    package mutating func nextEntry() throws(MachOError) -> BindOpcodeEntry? {
        while opcodes.pendingCount == 0 {
            guard let (opcode, immediate, opcodeOffset): (BindOpcode, UInt8, Int) = try opcodes.nextOpcode("bind") else { return nil }
            switch opcode {
            case .done: if stream != .lazy || opcodes.cursor.position > lastNonZeroPosition { opcodes.finished = true }
            case .setDylibOrdinalImm: try setOrdinal(UInt64(immediate), at: opcodeOffset, opcode)
            case .setDylibOrdinalULEB: try setOrdinal(try opcodes.cursor.uleb128(), at: opcodeOffset, opcode)
            case .setDylibSpecialImm: // 0, or sign-extended -1...-16
                try refuse(in: .weak, at: opcodeOffset, opcode)
                let special = immediate == 0 ? 0 : Int(Int8(bitPattern: 0xf0 | immediate))
                guard special >= BindFixup.ordinalWeakLookup else {
                    throw MachOError.malformed("\(opcode.name) sets unknown special ordinal \(special)", at: opcodeOffset)
                }
                libraryOrdinal = special
            case .setSymbolTrailingFlagsImm:
                flags = BindSymbolFlags(rawValue: immediate)
                let name = try opcodes.cursor.cStringBytes()
                symbolName = name
                symbolNameString = nil
                if stream == .weak, flags.contains(.nonWeakDefinition) { return entry(at: nil, name: name) }
            case .setTypeImm:
                guard immediate <= BindType.textPCRelative32.rawValue else {
                    throw MachOError.malformed("\(opcode.name) sets unknown bind type \(immediate)", at: opcodeOffset)
                }
                type = BindType(rawValue: immediate)
            case .setAddendSLEB: addend = try opcodes.cursor.sleb128()
            case .setSegmentAndOffsetULEB: try opcodes.setSegment(immediate, at: opcodeOffset, opcode.name)
            case .addAddrULEB: // wraps, as dyld's arithmetic does
                opcodes.segmentOffset &+= try opcodes.cursor.uleb128()
            case .doBind: try schedule(1, skip: 0, at: opcodeOffset, opcode)
            case .doBindAddAddrULEB:
                try refuse(in: .lazy, at: opcodeOffset, opcode)
                try schedule(1, skip: try opcodes.cursor.uleb128(), at: opcodeOffset, opcode)
            case .doBindAddAddrImmScaled:
                try refuse(in: .lazy, at: opcodeOffset, opcode)
                try schedule(1, skip: UInt64(immediate) * FixupLocationChecker.pointerSize, at: opcodeOffset, opcode)
            case .doBindULEBTimesSkippingULEB:
                try refuse(in: .lazy, at: opcodeOffset, opcode)
                let count = try opcodes.cursor.uleb128()
                let skip = try opcodes.cursor.uleb128()
                try schedule(count, skip: skip, at: opcodeOffset, opcode)
            case .threaded: throw MachOError(offset: opcodeOffset, .unsupported("threaded bind opcodes (arm64e)"))
            }
        }
        let location = try opcodes.nextLocation()
        guard let symbolName else {  // `schedule` refuses a bind before any symbol
            throw MachOError.malformed("bind before any BIND_OPCODE_SET_SYMBOL_TRAILING_FLAGS_IMM", at: opcodes.pendingOpcodeOffset)
        }
        return entry(at: location, name: symbolName)
    }

    private func entry(at location: FixupLocation?, name: ByteView) -> BindOpcodeEntry {
        BindOpcodeEntry(
            location: location, type: type,
            libraryOrdinal: stream == .weak ? BindFixup.ordinalWeakLookup : libraryOrdinal ?? BindFixup.ordinalSelf,
            symbolName: name, flags: flags, addend: addend)
    }

    private mutating func setOrdinal(_ ordinal: UInt64, at opcodeOffset: Int, _ opcode: BindOpcode) throws(MachOError) {
        try refuse(in: .weak, at: opcodeOffset, opcode)
        guard ordinal <= UInt64(libraryCount) else {
            throw MachOError.malformed("\(opcode.name) sets library ordinal \(ordinal), but the image has \(libraryCount) dependencies", at: opcodeOffset)
        }
        libraryOrdinal = Int(ordinal)
    }

    private func refuse(in refused: BindStreamKind, at opcodeOffset: Int, _ opcode: BindOpcode) throws(MachOError) {
        if stream == refused { throw MachOError.malformed("\(opcode.name) is not allowed in the \(refused.rawValue)-bind stream", at: opcodeOffset) }
    }

    /// Queues `count` binds from the current offset, each `skip` bytes past the end of the last.
    private mutating func schedule(_ count: UInt64, skip: UInt64, at opcodeOffset: Int, _ opcode: BindOpcode) throws(MachOError) {
        guard symbolName != nil else {
            throw MachOError.malformed("\(opcode.name) before any BIND_OPCODE_SET_SYMBOL_TRAILING_FLAGS_IMM", at: opcodeOffset)
        }
        guard libraryOrdinal != nil || stream == .weak else {
            throw MachOError.malformed("\(opcode.name) before any BIND_OPCODE_SET_DYLIB_ORDINAL_* opcode", at: opcodeOffset)
        }
        try opcodes.schedule(count, skip: skip, at: opcodeOffset, opcode.name)
    }
}

extension MachOImage {
    /// Calls `body` with each entry of one LC_DYLD_INFO bind stream, in stream order.
    package func forEachBindFixup(in stream: BindStreamKind, _ body: (BindFixup) throws(MachOError) -> Void) throws(MachOError) {
        var decoder = try BindOpcodeDecoder(self, stream: stream)
        while let fixup = try decoder.next() { try body(fixup) }
    }

    /// Every entry of one LC_DYLD_INFO bind stream, in stream order (empty without one).
    package func bindFixups(_ stream: BindStreamKind) throws(MachOError) -> [BindFixup] {
        var fixups: [BindFixup] = []
        try forEachBindFixup(in: stream) { fixups.append($0) }
        return fixups
    }
}
