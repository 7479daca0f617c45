/// `REBASE_TYPE_*` (and `BIND_TYPE_*`): how a rebase or bind writes the bytes at its location.
package struct RebaseType: RawRepresentable, Hashable, Sendable {
    package let rawValue: UInt8
    package init(rawValue: UInt8) { self.rawValue = rawValue }

    /// `*_TYPE_POINTER`: a pointer-sized absolute address.
    package static let pointer = RebaseType(rawValue: 1)
    /// `*_TYPE_TEXT_ABSOLUTE32`: a 32-bit absolute address in code.
    package static let textAbsolute32 = RebaseType(rawValue: 2)
    /// `*_TYPE_TEXT_PCREL32`: a 32-bit PC-relative address in code.
    package static let textPCRelative32 = RebaseType(rawValue: 3)
}

/// One rebase from the LC_DYLD_INFO rebase opcode stream: the bytes at `location` hold an
/// unslid address that a loader slides by the image's load offset.
package struct RebaseFixup: Hashable, Sendable {
    package let location: FixupLocation
    /// The type in force when the rebase was made (0 when the stream never set one).
    package let type: RebaseType

    package var segmentIndex: Int { location.segmentIndex }
    package var segmentOffset: UInt64 { location.segmentOffset }
    package var address: UInt64 { location.address }
}

/// Decodes a rebase opcode stream one rebase at a time.
///
/// Every ``RebaseOpcode`` is understood. A stream may end without `DONE`. Every run of
/// rebases is checked against its segment before the first one is produced, so the work is
/// bounded by the segment and the image, never by the counts the stream claims. A repeat
/// count of 0 makes no rebase, as in dyld (llvm-objdump shows one).
package struct RebaseOpcodeDecoder: Sendable {
    private var stream: OpcodeStream
    private var type = RebaseType(rawValue: 0)

    /// A decoder over the image's own rebase stream (empty without LC_DYLD_INFO).
    package init(_ image: MachOImage) throws(MachOError) {
        self.init(opcodes: try image.dyldInfoStream(\.rebase), image: image)
    }

    /// A decoder over `opcodes`, whose locations refer to `image`'s segments.
    package init(opcodes: ByteView, image: MachOImage) { stream = OpcodeStream(opcodes, image: image) }

    /// The next rebase, or nil at `REBASE_OPCODE_DONE` or the end of the stream.
    package mutating func next() throws(MachOError) -> RebaseFixup? {
        while stream.pendingCount == 0 {
            guard let (opcode, immediate, opcodeOffset): (RebaseOpcode, UInt8, Int) = try stream.nextOpcode("rebase") else { return nil }
            switch opcode {
            case .done: stream.finished = true
            case .setTypeImm:
                guard immediate <= RebaseType.textPCRelative32.rawValue else {
                    throw MachOError.malformed("\(opcode.name) sets unknown rebase type \(immediate)", at: opcodeOffset)
                }
                type = RebaseType(rawValue: immediate)
            case .setSegmentAndOffsetULEB: try stream.setSegment(immediate, at: opcodeOffset, opcode.name)
            case .addAddrULEB: // wraps, as dyld's arithmetic does
                stream.segmentOffset &+= try stream.cursor.uleb128()
            case .addAddrImmScaled: stream.segmentOffset &+= UInt64(immediate) * FixupLocationChecker.pointerSize
            case .doRebaseImmTimes: try stream.schedule(UInt64(immediate), skip: 0, at: opcodeOffset, opcode.name)
            case .doRebaseULEBTimes: try stream.schedule(try stream.cursor.uleb128(), skip: 0, at: opcodeOffset, opcode.name)
            case .doRebaseAddAddrULEB: try stream.schedule(1, skip: try stream.cursor.uleb128(), at: opcodeOffset, opcode.name)
            case .doRebaseULEBTimesSkippingULEB:
                let count = try stream.cursor.uleb128()
                let skip = try stream.cursor.uleb128()
                try stream.schedule(count, skip: skip, at: opcodeOffset, opcode.name)
            }
        }
        return RebaseFixup(location: try stream.nextLocation(), type: type)
    }
}

extension MachOImage {
    /// Calls `body` with each rebase of the LC_DYLD_INFO rebase stream, in stream order.
    package func forEachRebaseFixup(_ body: (RebaseFixup) throws(MachOError) -> Void) throws(MachOError) {
        var decoder = try RebaseOpcodeDecoder(self)
        while let fixup = try decoder.next() { try body(fixup) }
    }
}
