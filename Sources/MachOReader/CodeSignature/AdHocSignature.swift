/// The ad-hoc, linker-signed signature ld64 and ld64.lld write into the `LC_CODE_SIGNATURE`
/// range of an image (docs/code-signing.md, "Signing again"), computed again over the image's
/// current bytes so that a patched image can be signed in place. The layout is lld's
/// (`CodeSignatureSection`): a SuperBlob holding one CodeDirectory at offset 24 (version
/// `0x20400`, `CS_ADHOC | CS_LINKER_SIGNED`, SHA-256, 4 KiB pages, no special slots, code limit
/// the signature's offset, `__TEXT` as the executable segment, `CS_EXECSEG_MAIN_BINARY` for an
/// executable), the identifier padded so that the hashes start 16-aligned from the SuperBlob,
/// the whole padded to 16 bytes.
package enum AdHocSignature {
    /// `alignTo<8>(sizeof(CS_SuperBlob) + sizeof(CS_BlobIndex))`: where the CodeDirectory starts.
    static let blobHeadersSize = 24
    static let codeDirectorySize = 88
    /// `alignTo<16>(sizeof(CS_SuperBlob) + sizeof(CS_BlobIndex) + codeDirectorySize)`.
    static let fixedHeadersSize = 112
    static let pageSizeShift = 12

    /// The signature's bytes for the `image` (a thin image, or one slice's bytes) under
    /// `identifier`: exactly `image.codeSignature.dataSize` bytes, or an error naming why it
    /// cannot be written in place (no `LC_CODE_SIGNATURE`, a range outside the image, no
    /// `__TEXT`, or a signature of another size than the range holds).
    package static func signature(for image: MachOImage, identifier: String) throws(MachOError) -> [UInt8] {
        guard let command = image.codeSignature else {
            throw MachOError(offset: 0, structure: "LC_CODE_SIGNATURE", what: "the image has none: only an image signed before can be signed in place")
        }
        let codeLimit = Int(command.dataOffset), available = Int(command.dataSize)
        guard codeLimit % 16 == 0, codeLimit + available <= image.view.count else {
            throw MachOError(offset: codeLimit, structure: "LC_CODE_SIGNATURE",
                                     what: "its range \(hex(codeLimit))+\(hex(available)) is not 16-aligned inside the image of \(image.view.count) bytes")
        }
        guard let text = image.segments.first(where: { $0.name == "__TEXT" }) else {
            throw MachOError(offset: 0, structure: "__TEXT", what: "the image has no __TEXT segment to name as its executable segment")
        }
        let name = Array(identifier.utf8)
        let pageSize = 1 << pageSizeShift, hashSize = 32
        let pages = (codeLimit + pageSize - 1) / pageSize
        let allHeadersSize = (fixedHeadersSize + name.count + 1 + 15) / 16 * 16
        let size = (allHeadersSize + pages * hashSize + 15) / 16 * 16
        guard size == available else {
            throw MachOError(offset: codeLimit, structure: "LC_CODE_SIGNATURE",
                                     what: "the signature for identifier \"\(identifier)\" takes \(size) bytes, the range holds \(available): sign with the identifier it was linked with")
        }
        var out: [UInt8] = []
        out.reserveCapacity(size)
        func u32(_ value: Int) { for shift in stride(from: 24, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: value >> shift)) } }
        func u64(_ value: UInt64) { for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) } }
        u32(Int(CSMAGIC_EMBEDDED_SIGNATURE)); u32(size); u32(1)
        u32(Int(CSSLOT_CODEDIRECTORY)); u32(blobHeadersSize)
        out += [0, 0, 0, 0]
        u32(Int(CSMAGIC_CODEDIRECTORY)); u32(size - blobHeadersSize); u32(0x20400); u32(Int(CS_ADHOC | CS_LINKER_SIGNED))
        u32(codeDirectorySize + allHeadersSize - fixedHeadersSize)  // hashOffset: the identifier and its pad
        u32(codeDirectorySize)  // identOffset
        u32(0); u32(pages); u32(codeLimit)
        out += [UInt8(hashSize), CSHashType.sha256.rawValue, 0, UInt8(pageSizeShift)]
        u32(0); u32(0); u32(0); u32(0)  // spare2, scatterOffset, teamOffset, spare3
        u64(0)  // codeLimit64
        u64(text.fileOffset); u64(text.fileSize)
        u64(image.header.fileType == .execute ? 1 : 0)  // CS_EXECSEG_MAIN_BINARY
        out += name
        out += [UInt8](repeating: 0, count: allHeadersSize - fixedHeadersSize - name.count)
        for page in 0..<pages {
            let start = page * pageSize
            let bytes: ByteView
            do {
                bytes = try image.view.slice(start, min(pageSize, codeLimit - start))
            } catch {
                throw MachOError("code page \(page)", wrapping: error)
            }
            out += CSHashType.sha256.digestBytes(of: bytes)
        }
        out += [UInt8](repeating: 0, count: size - out.count)
        return out
    }
}
