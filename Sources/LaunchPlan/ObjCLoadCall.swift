/// A place in a launch's memory: an image and an offset from its preferred base.
public struct ImageLocation: Equatable, Hashable, Sendable {
    public let image: Int
    public let offset: UInt64

    public init(image: Int, offset: UInt64) {
        self.image = image
        self.offset = offset
    }
}

/// One `+load` method to call, `method(cls, selector)`, just before the initializers of image
/// `image` (the method's own, or the one whose subclass made a superclass's `+load` due).
public struct ObjCLoadCall: Equatable, Hashable, Sendable {
    public let image: Int
    public let method: ImageLocation
    public let cls: ImageLocation
    public let selector: ImageLocation

    public init(image: Int, method: ImageLocation, cls: ImageLocation, selector: ImageLocation) {
        self.image = image
        self.method = method
        self.cls = cls
        self.selector = selector
    }
}
