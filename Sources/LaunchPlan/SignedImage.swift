import MachOReader

/// A signed image as a launch identifies it (docs/code-signing.md, "At launch"): its best
/// CodeDirectory's cdHash, hash type and place in the file, its team ID and platform. A closure records it at
/// install; the fast path hashes that blob again (not the file) as part of the image's identity.
package struct SignedImage: Equatable, Sendable {
    package let cdHash: CDHash
    package let hashType: CSHashType
    /// The CodeDirectory blob's absolute offset in the file (a fat file's slice included) and size.
    package let codeDirectoryOffset: UInt64
    package let codeDirectorySize: Int
    /// The CodeDirectory's team ID (nil: none, as in every ad-hoc signature) and `platform`
    /// field: what library validation decides by (``SigningPolicy``).
    package let teamID: String?
    package let platform: UInt8

    /// A platform binary: the CodeDirectory's `platform` field is non-zero.
    package var isPlatformBinary: Bool { platform != 0 }

    package init(cdHash: CDHash, hashType: CSHashType, codeDirectoryOffset: UInt64, codeDirectorySize: Int,
                teamID: String? = nil, platform: UInt8 = 0) {
        (self.cdHash, self.hashType, self.codeDirectoryOffset, self.codeDirectorySize) = (cdHash, hashType, codeDirectoryOffset, codeDirectorySize)
        (self.teamID, self.platform) = (teamID, platform)
    }
}
