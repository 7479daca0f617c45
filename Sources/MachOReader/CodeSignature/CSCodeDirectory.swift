/// `CS_CodeDirectory`: the hashes a signature stands on. The fixed header grows with the
/// version (scatter, team ID, 64-bit code limit, executable segment, runtime, linkage);
/// each field is read only when the version has it and the blob holds it. The code slots
/// follow `hashOffset`, one hash per page of the image up to the code limit; the special
/// slots precede it, slot N at `hashOffset - N * hashSize`.
package struct CS_CodeDirectory: Sendable {
    /// The header's size at each version, for the fields it adds.
    static let headerSizes: [(version: UInt32, size: Int)] = [
        (CS_SUPPORTSLINKAGE, 108), (CS_SUPPORTSRUNTIME, 96), (CS_SUPPORTSEXECSEG, 88),
        (CS_SUPPORTSCODELIMIT64, 64), (CS_SUPPORTSTEAMID, 52), (CS_SUPPORTSSCATTER, 48), (CS_SUPPORTSNONE, 44),
    ]
    /// Page sizes (log2) accepted: xnu refuses a CodeDirectory whose pages are smaller than
    /// 4 KiB or larger than the machine's page (16 KiB on arm64), 0 (one page) included.
    package static let pageSizeShifts: ClosedRange<UInt8> = 12...14

    /// The linkage fields of version 0x20600.
    package struct Linkage: Equatable, Sendable {
        package let hashType: UInt8, applicationType: UInt8, applicationSubtype: UInt16
        package let offset: UInt32, size: UInt32
    }

    /// The SuperBlob slot it came from (`CSSLOT_CODEDIRECTORY` or an alternate).
    package let slot: UInt32
    /// The blob's bytes: exactly its `length` (what its cdHash is taken over).
    package let blob: ByteView, version: UInt32, flags: UInt32, hashOffset: UInt32, identOffset: UInt32
    package let nSpecialSlots: UInt32, nCodeSlots: UInt32
    /// The 32-bit `codeLimit` field (see ``codeLimit`` for the one that applies).
    package let codeLimit32: UInt32, hashSize: UInt8, hashType: CSHashType, platform: UInt8
    /// log2 of the page size; 0 means the whole code is one page.
    package let pageSizeShift: UInt8, scatterOffset: UInt32?, teamOffset: UInt32?, codeLimit64: UInt64?
    package let execSegBase: UInt64?, execSegLimit: UInt64?, execSegFlags: UInt64?
    package let runtime: UInt32?, preEncryptOffset: UInt32?, linkage: Linkage?, identifier: String
    package let teamID: String?

    /// The number of image bytes the code slots cover: `codeLimit64` when the version has it
    /// and it is set, else `codeLimit`.
    package var codeLimit: UInt64 {
        if let limit = codeLimit64, limit != 0 { return limit }
        return UInt64(codeLimit32)
    }

    /// The page size in bytes; 0 when the whole code is one page.
    package var pageSize: Int { 1 << Int(pageSizeShift) }

    /// The structure name errors carry.
    package var structure: String { CodeSignatureNames.slotName(slot) }

    /// Parses a CodeDirectory blob (its bytes exactly) from SuperBlob slot `slot`; with
    /// `signatureOffset`, the code limit must not pass it: a signature covers the bytes before
    /// it (codesign and ld64 set the limit to the signature's offset), never itself or more.
    package init(parsing blob: ByteView, slot: UInt32, signatureOffset: Int? = nil) throws(MachOError) {
        let structure = CodeSignatureNames.slotName(slot)
        func fail(_ field: Int, _ what: String) -> MachOError {
            MachOError(offset: blob.absolute(field), structure: structure, what: what)
        }
        self.slot = slot
        self.blob = blob
        let magic = try reading(structure) { () throws(MachOError) in try blob.u32BE(0) }
        guard magic == CSMAGIC_CODEDIRECTORY else { throw fail(0, "magic \(hex(magic)) is not CSMAGIC_CODEDIRECTORY (0xfade0c02)") }
        guard blob.count >= 44 else { throw fail(4, "length \(blob.count) is less than the 44-byte header") }
        let version = try reading(structure) { () throws(MachOError) in try blob.u32BE(8) }
        guard version >= CS_SUPPORTSNONE else { throw fail(8, "version \(hex(version)) is older than the earliest (0x20001)") }
        let headerSize = CS_CodeDirectory.headerSizes.first { version >= $0.version }!.size
        guard blob.count >= headerSize else {
            throw fail(4, "length \(blob.count) is less than the \(headerSize)-byte header of version \(hex(version))")
        }
        // Every read below lies inside the header just checked.
        func u32(_ at: Int) throws(MachOError) -> UInt32 { try reading(structure) { () throws(MachOError) in try blob.u32BE(at) } }
        func u64(_ at: Int) throws(MachOError) -> UInt64 { try reading(structure) { () throws(MachOError) in try blob.u64BE(at) } }
        func u8(_ at: Int) throws(MachOError) -> UInt8 { try reading(structure) { () throws(MachOError) in try blob.u8(at) } }
        self.version = version
        flags = try u32(12)
        hashOffset = try u32(16)
        identOffset = try u32(20)
        nSpecialSlots = try u32(24)
        nCodeSlots = try u32(28)
        codeLimit32 = try u32(32)
        hashSize = try u8(36)
        let rawHashType = try u8(37)
        platform = try u8(38)
        pageSizeShift = try u8(39)
        scatterOffset = version >= CS_SUPPORTSSCATTER ? try u32(44) : nil
        teamOffset = version >= CS_SUPPORTSTEAMID ? try u32(48) : nil
        codeLimit64 = version >= CS_SUPPORTSCODELIMIT64 ? try u64(56) : nil
        let execSeg = version >= CS_SUPPORTSEXECSEG
        (execSegBase, execSegLimit, execSegFlags) = execSeg ? (try u64(64), try u64(72), try u64(80)) : (nil, nil, nil)
        (runtime, preEncryptOffset) = version >= CS_SUPPORTSRUNTIME ? (try u32(88), try u32(92)) : (nil, nil)
        linkage = version >= CS_SUPPORTSLINKAGE
            ? Linkage(hashType: try u8(96), applicationType: try u8(97), applicationSubtype: UInt16(try u8(98)) << 8 | UInt16(try u8(99)),
                      offset: try u32(100), size: try u32(104))
            : nil

        guard let hashType = CSHashType(rawValue: rawHashType) else {
            throw fail(37, "hash type \(rawHashType) is not SHA-1, SHA-256, SHA-256 (truncated) or SHA-384")
        }
        self.hashType = hashType
        guard Int(hashSize) == hashType.hashSize else {
            throw fail(36, "hash size \(hashSize) is not \(hashType.hashSize), the size of a \(hashType) hash")
        }
        // Scatter vectors (pages listed out of order, a pre-10.6 form) are not read: a page's
        // slot would not be its index.
        if let scatter = scatterOffset, scatter != 0 { throw fail(44, "scatter vectors (scatterOffset \(hex(scatter))) are not supported") }
        guard CS_CodeDirectory.pageSizeShifts.contains(pageSizeShift) else {
            throw fail(39, "page size 2^\(pageSizeShift) is outside 2^12...2^14 (4 KiB to arm64's 16 KiB pages, the sizes the kernel accepts)")
        }
        // The slots: special ones before hashOffset, after the header; code ones after it,
        // inside the blob. This bounds both counts by the blob's bytes.
        let size = UInt64(hashSize)
        let specialBytes = UInt64(nSpecialSlots) * size
        guard UInt64(hashOffset) >= specialBytes, UInt64(hashOffset) - specialBytes >= UInt64(headerSize) else {
            throw fail(16, "hash offset \(hex(hashOffset)) leaves no room for \(nSpecialSlots) special slots after the \(headerSize)-byte header")
        }
        guard UInt64(hashOffset) + UInt64(nCodeSlots) * size <= UInt64(blob.count) else {
            throw fail(28, "\(nCodeSlots) code slots at \(hex(hashOffset)) run past the blob's \(blob.count) bytes")
        }
        // The code slots cover exactly the code limit, which lies before the signature.
        let limit = (codeLimit64 ?? 0) != 0 ? codeLimit64! : UInt64(codeLimit32)
        if let signatureOffset, limit > UInt64(signatureOffset) {
            throw fail((codeLimit64 ?? 0) != 0 ? 56 : 32,
                       "code limit \(hex(limit)) is past the signature's own offset \(hex(signatureOffset)) (a signature covers the bytes before it)")
        }
        let pages = (limit + (1 << UInt64(pageSizeShift)) - 1) >> UInt64(pageSizeShift)
        guard pages == UInt64(nCodeSlots) else {
            throw fail(28, "\(nCodeSlots) code slots do not cover the code limit \(hex(limit)) in pages of \(1 << Int(pageSizeShift)) (\(pages) needed)")
        }
        guard identOffset >= UInt32(headerSize), identOffset < UInt32(blob.count) else {
            throw fail(20, "identifier offset \(hex(identOffset)) is outside the blob after its header")
        }
        let identAt = Int(identOffset)
        identifier = try reading("\(structure) identifier") { () throws(MachOError) in try blob.cString(identAt) }
        if let team = teamOffset, team != 0 {
            guard team >= UInt32(headerSize), team < UInt32(blob.count) else {
                throw fail(48, "team ID offset \(hex(team)) is outside the blob after its header")
            }
            teamID = try reading("\(structure) team ID") { () throws(MachOError) in try blob.cString(Int(team)) }
        } else {
            teamID = nil
        }
    }

    /// The number of code slots (pages).
    package var pageCount: Int { Int(nCodeSlots) }

    /// The image bytes code slot `slot` covers, as offsets from the image's start: the
    /// page, the last one short at the code limit. Empty for a slot out of range.
    package func pageRange(_ slot: Int) -> Range<Int> {
        guard slot >= 0, slot < Int(nCodeSlots) else { return 0..<0 }
        let limit = Int(clamping: codeLimit)
        let start = slot << Int(pageSizeShift)
        return start..<min(start + pageSize, limit)
    }

    /// Code slot `slot`'s hash, nil out of range.
    @inline(__always)
    package func codeSlotHash(_ slot: Int) -> ByteView? {
        guard slot >= 0, slot < Int(nCodeSlots) else { return nil }
        return try? blob.slice(Int(hashOffset) + slot * Int(hashSize), Int(hashSize))
    }

    /// Special slot `type`'s hash (`CSSLOT_REQUIREMENTS`, ...), nil when the directory has
    /// fewer special slots.
    package func specialSlotHash(_ type: UInt32) -> ByteView? {
        guard type >= 1, type <= nSpecialSlots else { return nil }
        return try? blob.slice(Int(hashOffset) - Int(type) * Int(hashSize), Int(hashSize))
    }

    /// The CodeDirectory's cdHash: the hash of its blob under its own hash type, truncated to
    /// 20 bytes. Allocates nothing.
    package var cdHash: CDHash { hashType.cdHash(of: blob) }

    /// Whether `page` (the bytes of ``pageRange(_:)``, in place) hashes to code slot `slot`.
    /// Allocates nothing; a slot out of range never matches.
    @inline(__always)
    package func verifyPage(_ page: ByteView, slot: Int) -> Bool {
        guard let expected = codeSlotHash(slot) else { return false }
        return hashType.digest(of: page, matches: expected)
    }

    /// Whether `blob`'s bytes hash to special slot `type` (false when the slot is absent).
    package func verifySpecialSlot(_ type: UInt32, blob: ByteView) -> Bool {
        guard let expected = specialSlotHash(type) else { return false }
        return hashType.digest(of: blob, matches: expected)
    }
}

extension ByteView {
    /// Whether every byte of the window is 0 (an empty special slot).
    var isAllZero: Bool {
        for index in 0..<count where (try? u8(index)) != 0 { return false }
        return true
    }
}
