import MachOReader

/// A signed image as a launch identifies it (docs/code-signing.md, "At launch"): its best
/// CodeDirectory's cdHash, hash type and place in the file. A closure records it at
/// install; the fast path hashes that blob again (not the file) as part of the image's identity.
public struct SignedImage: Equatable, Sendable {
    public let cdHash: CDHash
    public let hashType: CSHashType
    /// The CodeDirectory blob's absolute offset in the file (a fat file's slice included) and size.
    public let codeDirectoryOffset: UInt64
    public let codeDirectorySize: Int

    public init(cdHash: CDHash, hashType: CSHashType, codeDirectoryOffset: UInt64, codeDirectorySize: Int) {
        self.cdHash = cdHash
        self.hashType = hashType
        self.codeDirectoryOffset = codeDirectoryOffset
        self.codeDirectorySize = codeDirectorySize
    }
}
