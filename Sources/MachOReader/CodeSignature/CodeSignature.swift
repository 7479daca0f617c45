/// An image's embedded code signature, read whole: the SuperBlob `LC_CODE_SIGNATURE` names
/// and every blob it holds that the reader knows. Offsets in the signature are relative to
/// the image (a universal file's slice), errors' offsets absolute in the file.
package struct CodeSignature: Sendable {
    /// The `LC_CODE_SIGNATURE` command.
    package let command: LinkeditData, superBlob: CS_SuperBlob
    /// The CodeDirectories: the primary one (`CSSLOT_CODEDIRECTORY`) first, then the
    /// alternates in slot order.
    package let codeDirectories: [CS_CodeDirectory], requirements: CS_Requirements?
    package let entitlements: CS_Entitlements?, derEntitlements: CS_DEREntitlements?
    /// The CMS signature wrapper, if the signature has one.
    package let cms: CS_BlobWrapper?

    /// The image's signature, nil when it has no `LC_CODE_SIGNATURE`.
    package static func read(from image: MachOImage) throws(MachOError) -> CodeSignature? {
        guard let command = image.codeSignature else { return nil }
        return try CodeSignature(image: image, command: command)
    }

    package init(image: MachOImage, command: LinkeditData) throws(MachOError) {
        self.command = command
        let region: ByteView
        do {
            region = try image.linkeditBytes(command)
        } catch {
            throw MachOError(
                offset: error.offset, structure: "LC_CODE_SIGNATURE",
                what: "data \(hex(command.dataOffset))+\(hex(command.dataSize)) is outside the image (\(image.view.count) bytes)")
        }
        superBlob = try CS_SuperBlob(parsing: region)
        var directories: [CS_CodeDirectory] = []
        var requirements: CS_Requirements?, entitlements: CS_Entitlements?, derEntitlements: CS_DEREntitlements?
        var cms: CS_BlobWrapper?
        for blob in superBlob.index.sorted(by: { $0.type < $1.type }) {
            switch blob.type {
            case CSSLOT_CODEDIRECTORY, CSSLOT_ALTERNATE_CODEDIRECTORIES..<CSSLOT_ALTERNATE_CODEDIRECTORY_LIMIT:
                let directory = try CS_CodeDirectory(parsing: blob.view, slot: blob.type, signatureOffset: Int(command.dataOffset))
                directories.append(directory)
            case CSSLOT_REQUIREMENTS: requirements = try CS_Requirements(parsing: blob)
            case CSSLOT_ENTITLEMENTS: entitlements = try CS_Entitlements(parsing: blob)
            case CSSLOT_DER_ENTITLEMENTS: derEntitlements = try CS_DEREntitlements(parsing: blob)
            case CSSLOT_SIGNATURESLOT: cms = try CS_BlobWrapper(parsing: blob)
            default: break
            }
        }
        guard directories.first?.slot == CSSLOT_CODEDIRECTORY else {
            throw MachOError(offset: superBlob.view.absolute(0), structure: "SuperBlob", what: "holds no CodeDirectory in slot 0")
        }
        codeDirectories = directories
        (self.requirements, self.entitlements, self.derEntitlements, self.cms) = (requirements, entitlements, derEntitlements, cms)
    }

    /// The CodeDirectory with the strongest hash type: the one whose cdHash names the image.
    package var bestCodeDirectory: CS_CodeDirectory { codeDirectories.max { $0.hashType.rank < $1.hashType.rank }! }

    /// The image's cdHash (the strongest CodeDirectory's).
    package var cdHash: CDHash { bestCodeDirectory.cdHash }

    /// The blobs a CodeDirectory's special slots can vouch for from the file alone.
    package static let checkableSpecialSlots: [UInt32] = [
        CSSLOT_REQUIREMENTS, CSSLOT_ENTITLEMENTS, CSSLOT_DER_ENTITLEMENTS, CSSLOT_LAUNCH_CONSTRAINT_SELF,
        CSSLOT_LAUNCH_CONSTRAINT_PARENT, CSSLOT_LAUNCH_CONSTRAINT_RESPONSIBLE, CSSLOT_LIBRARY_CONSTRAINT,
    ]
}
