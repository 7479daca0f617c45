import LoaderCore

/// A closure body read as far as its image records: what a launch needs to check the
/// closure's binding and to open, identify and map the images. The bind-target table and
/// everything after it are read apart (``LaunchClosure/parse(body:path:helper:beside:)``),
/// on the launch's second core while this thread opens the images; no fixup is written and
/// nothing runs before both are read and checked.
public struct ClosureImageTable: Sendable {
    /// What the closure was built for.
    public let binding: ClosureBinding
    /// Identities without inode and mtime, validated by content hash alone.
    public let contentOnlyIdentity: Bool
    /// How many of the first images are the launch's roots.
    public let rootCount: Int
    /// Images in load order, each record read and checked whole.
    public let images: [ClosureImage]

    /// Opens the images in `range` (every image by default) once each and checks each is the
    /// file the closure was built from (see
    /// ``LaunchClosure/openImages(_:closurePath:alwaysHash:readAhead:handOff:hashedImages:)``).
    public func openImages(_ range: Range<Int>? = nil, closurePath: String, alwaysHash: Bool, readAhead: Bool = false,
                           hashedImages: inout Int) throws(ClosureError) -> [ImageDescriptor] {
        try ClosureImage.openAll(images[range ?? images.indices], contentOnly: contentOnlyIdentity, closurePath: closurePath,
                                 alwaysHash: alwaysHash, readAhead: readAhead, hashedImages: &hashedImages)
    }
}
