/// `CS_Requirements`: the requirement set, an index of compiled requirements by type
/// (host, guest, designated, library, plugin). Read and bounded, not evaluated.
package struct CS_Requirements: Sendable {
    /// One `CS_Requirement` of the set.
    package struct Entry: Sendable {
        package let type: UInt32, offset: UInt32
        /// The requirement blob (`CSMAGIC_REQUIREMENT`), its length exactly.
        package let view: ByteView
        /// The expression's form (1: expression form).
        package let kind: UInt32
        package var typeName: String { CodeSignatureNames.requirementTypeName(type) }
    }

    /// The whole set's blob, the bytes its special slot hashes.
    package let blob: ByteView, entries: [Entry]

    package init(parsing index: CS_BlobIndex) throws(MachOError) {
        try index.expect(CSMAGIC_REQUIREMENTS, "CSMAGIC_REQUIREMENTS")
        let view = index.view
        let structure = "Requirements"
        let count = try reading(structure) { () throws(MachOError) in try view.u32BE(8) }
        let indexEnd = 12 + UInt64(count) * 8
        guard indexEnd <= UInt64(view.count) else {
            throw MachOError(offset: view.absolute(8), structure: structure, what: "count \(count) needs \(indexEnd) bytes, the blob has \(view.count)")
        }
        var entries: [Entry] = []
        entries.reserveCapacity(Int(count))
        for entry in 0..<Int(count) {
            let at = 12 + entry * 8
            let (type, offset) = try reading(structure) { () throws(MachOError) in (try view.u32BE(at), try view.u32BE(at + 4)) }
            let name = "\(structure) entry \(entry) (\(CodeSignatureNames.requirementTypeName(type)))"
            guard UInt64(offset) >= indexEnd, UInt64(offset) + 12 <= UInt64(view.count) else {
                throw MachOError(offset: view.absolute(at + 4), structure: name, what: "offset \(hex(offset)) is outside the set's requirements")
            }
            let (magic, length, kind) = try reading(name) { () throws(MachOError) in
                (try view.u32BE(Int(offset)), try view.u32BE(Int(offset) + 4), try view.u32BE(Int(offset) + 8))
            }
            guard magic == CSMAGIC_REQUIREMENT else {
                throw MachOError(offset: view.absolute(Int(offset)), structure: name, what: "magic \(hex(magic)) is not CSMAGIC_REQUIREMENT (0xfade0c00)")
            }
            guard length >= 12, UInt64(offset) + UInt64(length) <= UInt64(view.count) else {
                throw MachOError(offset: view.absolute(Int(offset) + 4), structure: name, what: "length \(length) runs past the set's \(view.count) bytes")
            }
            let requirement = try reading(name) { () throws(MachOError) in try view.slice(Int(offset), Int(length)) }
            entries.append(Entry(type: type, offset: offset, view: requirement, kind: kind))
        }
        blob = view
        self.entries = entries
    }
}

/// `CSMAGIC_EMBEDDED_ENTITLEMENTS`: the entitlements as an XML property list.
package struct CS_Entitlements: Sendable {
    package let blob: ByteView
    /// The property list's text.
    package let xml: String

    package init(parsing index: CS_BlobIndex) throws(MachOError) {
        try index.expect(CSMAGIC_EMBEDDED_ENTITLEMENTS, "CSMAGIC_EMBEDDED_ENTITLEMENTS")
        blob = index.view
        xml = index.payload.string
    }
}

/// `CSMAGIC_EMBEDDED_DER_ENTITLEMENTS`: the entitlements in DER: `[APPLICATION 16] {
/// INTEGER version, [16] { SEQUENCE { UTF8String key, value }... } }`. The dictionary's
/// entries are read (keys, and a short form of each value); nested values are bounded,
/// not decoded.
package struct CS_DEREntitlements: Sendable {
    /// One entitlement: its key and its value, as text.
    package struct Entry: Equatable, Sendable {
        package let key: String, value: String
    }

    package let blob: ByteView, version: Int, entries: [Entry]

    package init(parsing index: CS_BlobIndex) throws(MachOError) {
        try index.expect(CSMAGIC_EMBEDDED_DER_ENTITLEMENTS, "CSMAGIC_EMBEDDED_DER_ENTITLEMENTS")
        blob = index.view
        let structure = "DER entitlements"
        let payload = index.payload
        let outer = try DERElement(payload, at: 0, structure)
        guard outer.tag == 0x70, outer.end == payload.count else {
            throw MachOError(offset: payload.absolute(0), structure: structure, what: "not one [APPLICATION 16] element filling the blob (tag \(hex(outer.tag)))")
        }
        let versionElement = try DERElement(payload, at: outer.contentStart, structure)
        guard versionElement.tag == 0x02, versionElement.length >= 1, versionElement.length <= 8 else {
            throw MachOError(offset: payload.absolute(outer.contentStart), structure: structure, what: "the version is not an INTEGER")
        }
        version = Int(truncatingIfNeeded: try versionElement.unsignedValue(payload, structure))
        let dictionary = try DERElement(payload, at: versionElement.end, structure)
        guard dictionary.tag == 0xb0, dictionary.end <= outer.end else {
            throw MachOError(offset: payload.absolute(versionElement.end), structure: structure, what: "the dictionary is not a [16] element inside the blob (tag \(hex(dictionary.tag)))")
        }
        var entries: [Entry] = []
        var position = dictionary.contentStart
        while position < dictionary.end {
            let pair = try DERElement(payload, at: position, structure)
            guard pair.tag == 0x30, pair.end <= dictionary.end else {
                throw MachOError(offset: payload.absolute(position), structure: structure, what: "a dictionary entry is not a SEQUENCE inside the dictionary")
            }
            let key = try DERElement(payload, at: pair.contentStart, structure)
            guard key.tag == 0x0c, key.end < pair.end else {
                throw MachOError(offset: payload.absolute(pair.contentStart), structure: structure, what: "a dictionary key is not a UTF8String followed by a value")
            }
            let value = try DERElement(payload, at: key.end, structure)
            guard value.end == pair.end else {
                throw MachOError(offset: payload.absolute(key.end), structure: structure, what: "a dictionary entry holds more than a key and a value")
            }
            entries.append(Entry(key: try key.text(payload, structure), value: try value.summary(payload, structure)))
            position = pair.end
        }
        self.entries = entries
    }
}

/// One DER element's header: tag, where its content lies (window-relative), checked to end
/// inside the window.
struct DERElement {
    let tag: UInt8, contentStart: Int, length: Int
    var end: Int { contentStart + length }

    init(_ view: ByteView, at offset: Int, _ structure: String) throws(MachOError) {
        let (tag, first) = try reading(structure) { () throws(MachOError) in (try view.u8(offset), try view.u8(offset + 1)) }
        var length = 0
        var start = offset + 2
        if first & 0x80 == 0 {
            length = Int(first)
        } else {
            let digits = Int(first & 0x7f)
            guard digits >= 1, digits <= 4 else {
                throw MachOError(offset: view.absolute(offset + 1), structure: structure, what: "DER length with \(digits) length bytes (indefinite or over 4) is not supported")
            }
            for index in 0..<digits {
                let byte = try reading(structure) { () throws(MachOError) in try view.u8(offset + 2 + index) }
                length = length << 8 | Int(byte)
            }
            start += digits
        }
        guard start <= view.count, length <= view.count - start else {
            throw MachOError(offset: view.absolute(offset), structure: structure, what: "DER element of \(length) bytes runs past its blob")
        }
        (self.tag, contentStart, self.length) = (tag, start, length)
    }

    func text(_ view: ByteView, _ structure: String) throws(MachOError) -> String {
        try reading(structure) { () throws(MachOError) in try view.slice(contentStart, length) }.string
    }

    func unsignedValue(_ view: ByteView, _ structure: String) throws(MachOError) -> UInt64 {
        var value: UInt64 = 0
        for index in 0..<min(length, 8) {
            value = value << 8 | UInt64(try reading(structure) { () throws(MachOError) in try view.u8(contentStart + index) })
        }
        return value
    }

    /// A value as text: booleans, integers and strings themselves, containers by size.
    func summary(_ view: ByteView, _ structure: String) throws(MachOError) -> String {
        switch tag {
        case 0x01: return (try unsignedValue(view, structure)) != 0 ? "true" : "false"
        case 0x02: return String(try unsignedValue(view, structure))
        case 0x0c: return "\"" + (try text(view, structure)) + "\""
        case 0x30: return "array (\(length) bytes)"
        case 0xb0: return "dictionary (\(length) bytes)"
        default: return "tag \(hex(tag)) (\(length) bytes)"
        }
    }
}

/// `CSMAGIC_BLOBWRAPPER` in the signature slot: the CMS signature. Recognised and sized,
/// never validated (no certificate chain is checked). Empty in an ad-hoc signature.
package struct CS_BlobWrapper: Sendable {
    package let blob: ByteView
    /// The CMS (PKCS #7) data.
    package var cms: ByteView { (try? blob.slice(8, blob.count - 8)) ?? blob }

    package init(parsing index: CS_BlobIndex) throws(MachOError) {
        try index.expect(CSMAGIC_BLOBWRAPPER, "CSMAGIC_BLOBWRAPPER")
        blob = index.view
    }
}
