/// A place in a launch's memory: an image and an offset from its preferred base.
package struct ImageLocation: Equatable, Hashable, Sendable {
    package let image: Int
    package let offset: UInt64

    package init(image: Int, offset: UInt64) {
        (self.image, self.offset) = (image, offset)
    }
}

/// One `+load` method to call, `method(cls, selector)`, just before the initializers of image
/// `image` (the method's own, or the one whose subclass made a superclass's `+load` due).
package struct ObjCLoadCall: Equatable, Hashable, Sendable {
    package let image: Int
    package let method: ImageLocation
    package let cls: ImageLocation
    package let selector: ImageLocation

    package init(image: Int, method: ImageLocation, cls: ImageLocation, selector: ImageLocation) {
        (self.image, self.method, self.cls, self.selector) = (image, method, cls, selector)
    }
}
