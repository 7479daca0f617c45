
/// A closure body read as far as its image records: what a launch needs to check the
/// closure's binding and to open, identify and map the images. The bind-target table and
/// everything after it are read apart (``LaunchClosure/readImageIndex(_:path:)``): the fast
/// path reads them on its second core while its own thread opens the images; no fixup is written and
/// nothing runs before both are read and checked.
public struct ClosureImageTable: Sendable {
    /// What the closure was built for.
    public let binding: ClosureBinding
    /// The binding's hash of the ordered image paths, checked against `images` when the
    /// closure is read whole.
    package let imageListHash: UInt64
    /// Identities without inode and mtime, validated by content hash alone.
    public let contentOnlyIdentity: Bool
    /// How many of the first images are the launch's roots.
    public let rootCount: Int
    /// Images in load order, each record read and checked whole.
    public let images: [ClosureImage]

    /// The table of a body's header fields (`index`) and its image records, read.
    package init(_ index: LaunchClosure.ImageIndex, images: [ClosureImage]) {
        (binding, contentOnlyIdentity, rootCount) = (index.binding, index.contentOnlyIdentity, index.rootCount)
        imageListHash = index.imageListHash
        self.images = images
    }
}
