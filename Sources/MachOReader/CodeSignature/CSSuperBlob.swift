/// `CS_BlobIndex` and the blob it points at: the slot type, where the blob lies and its
/// generic header (`CS_GenericBlob`: magic and length).
package struct CS_BlobIndex: Sendable {
    /// The slot type (`CSSLOT_*`).
    package let type: UInt32
    /// Offset of the blob from the SuperBlob's start.
    package let offset: UInt32
    /// The blob's magic (`CSMAGIC_*`).
    package let magic: UInt32
    /// The blob's bytes: exactly its `length`, header included.
    package let view: ByteView

    package var name: String { CodeSignatureNames.slotName(type) }
}

/// `CS_SuperBlob`: the embedded signature's container, `LC_CODE_SIGNATURE`'s bytes. A
/// big-endian header (magic, length, count) and `count` index entries, each naming a blob
/// that must lie whole inside the SuperBlob, after the index.
package struct CS_SuperBlob: Sendable {
    package static let headerSize = 12
    package static let indexEntrySize = 8

    /// The SuperBlob's bytes: exactly its `length`.
    package let view: ByteView, magic: UInt32, length: UInt32, index: [CS_BlobIndex]

    /// Parses the SuperBlob at the start of `region` (the `LC_CODE_SIGNATURE` range).
    package init(parsing region: ByteView) throws(MachOError) {
        let structure = "SuperBlob"
        let magic = try reading(structure) { () throws(MachOError) in try region.u32BE(0) }
        guard magic == CSMAGIC_EMBEDDED_SIGNATURE else {
            let what = magic == CSMAGIC_EMBEDDED_SIGNATURE_OLD
                ? "old-style embedded signature (magic 0xfade0b02) is not supported"
                : "magic \(hex(magic)) is not CSMAGIC_EMBEDDED_SIGNATURE (0xfade0cc0)"
            throw MachOError(offset: region.absolute(0), structure: structure, what: what)
        }
        let (length, count) = try reading(structure) { () throws(MachOError) in (try region.u32BE(4), try region.u32BE(8)) }
        guard Int(length) >= CS_SuperBlob.headerSize else {
            throw MachOError(offset: region.absolute(4), structure: structure, what: "length \(length) is less than its 12-byte header")
        }
        guard Int(length) <= region.count else {
            throw MachOError(
                offset: region.absolute(4), structure: structure,
                what: "length \(length) runs past the \(region.count) bytes LC_CODE_SIGNATURE gives it")
        }
        let view = try reading(structure) { () throws(MachOError) in try region.slice(0, Int(length)) }
        // The index must fit in the SuperBlob: this bounds the count by the bytes present.
        let indexEnd = UInt64(CS_SuperBlob.headerSize) + UInt64(count) * UInt64(CS_SuperBlob.indexEntrySize)
        guard indexEnd <= UInt64(length) else {
            throw MachOError(
                offset: view.absolute(8), structure: structure,
                what: "count \(count) needs an index of \(indexEnd) bytes, more than its length \(length)")
        }
        var index: [CS_BlobIndex] = []
        index.reserveCapacity(Int(count))
        for entry in 0..<Int(count) {
            let at = CS_SuperBlob.headerSize + entry * CS_SuperBlob.indexEntrySize
            let (type, offset) = try reading(structure) { () throws(MachOError) in (try view.u32BE(at), try view.u32BE(at + 4)) }
            let blobStructure = "\(structure) index entry \(entry) (\(CodeSignatureNames.slotName(type)))"
            if index.contains(where: { $0.type == type }) {
                throw MachOError(offset: view.absolute(at), structure: blobStructure, what: "a second blob for slot \(hex(type))")
            }
            guard UInt64(offset) >= indexEnd, UInt64(offset) + 8 <= UInt64(length) else {
                throw MachOError(
                    offset: view.absolute(at + 4), structure: blobStructure,
                    what: "blob offset \(hex(offset)) is outside the SuperBlob's blobs (\(hex(indexEnd))..<\(hex(length)))")
            }
            let blobStart = Int(offset)
            let (blobMagic, blobLength) = try reading(blobStructure) { () throws(MachOError) in
                (try view.u32BE(blobStart), try view.u32BE(blobStart + 4))
            }
            guard blobLength >= 8 else {
                throw MachOError(offset: view.absolute(blobStart + 4), structure: blobStructure, what: "blob length \(blobLength) is less than its 8-byte header")
            }
            guard UInt64(offset) + UInt64(blobLength) <= UInt64(length) else {
                throw MachOError(
                    offset: view.absolute(blobStart + 4), structure: blobStructure,
                    what: "blob of \(blobLength) bytes at \(hex(offset)) runs past the SuperBlob's end (length \(length))")
            }
            let blob = try reading(blobStructure) { () throws(MachOError) in try view.slice(blobStart, Int(blobLength)) }
            index.append(CS_BlobIndex(type: type, offset: offset, magic: blobMagic, view: blob))
        }
        (self.view, self.magic, self.length, self.index) = (view, magic, length, index)
    }

    /// The blob in slot `type`, if any.
    package func blob(_ type: UInt32) -> CS_BlobIndex? { index.first { $0.type == type } }
}

extension CS_BlobIndex {
    /// Fails unless the blob's magic is `expected`.
    func expect(_ expected: UInt32, _ name: String) throws(MachOError) {
        guard magic == expected else {
            throw MachOError(offset: view.absolute(0), structure: self.name, what: "magic \(hex(magic)) is not \(name) (\(hex(expected)))")
        }
    }

    /// The blob's payload: its bytes after the 8-byte header.
    var payload: ByteView {
        // The index checked the blob is at least 8 bytes long.
        (try? view.slice(8, view.count - 8)) ?? view
    }
}
