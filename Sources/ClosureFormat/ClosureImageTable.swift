
/// A closure body read as far as its image records: what a launch needs to check the binding
/// and to open, identify and map the images. The fast path reads the rest on its second core
/// while its own thread opens the images; nothing is written or run before both are checked.
package struct ClosureImageTable: Sendable {
    package let binding: ClosureBinding
    /// The binding's hash of the ordered image paths, checked when the closure is read whole.
    package let imageListHash: UInt64
    package let contentOnlyIdentity: Bool
    package let rootCount: Int
    package let sharedCache: ClosureSharedCache?
    package let images: [ClosureImage]

    package init(_ index: LaunchClosure.ImageIndex, images: [ClosureImage]) {
        (binding, contentOnlyIdentity, rootCount, sharedCache) = (index.binding, index.contentOnlyIdentity, index.rootCount, index.sharedCache)
        imageListHash = index.imageListHash
        self.images = images
    }
}
