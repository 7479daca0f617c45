import LaunchPlan

/// The dyld shared cache a closure binds into (docs/shared-cache.md): which file, and which
/// build of it. A launch checks the cache's UUID once, never its images one by one; a cache
/// with another UUID makes the closure stale.
///
/// Encoding: a byte (1 when the closure binds into a cache), then the cache's path string
/// and its 16-byte UUID.
package struct ClosureSharedCache: Equatable, Sendable {
    package var path: String
    package var uuid: [UInt8]

    package init(path: String, uuid: [UInt8]) {
        (self.path, self.uuid) = (path, uuid)
    }

    static func parse(_ r: inout ClosureReader) throws(ClosureError) -> ClosureSharedCache? {
        guard try r.u8() != 0 else { return nil }
        return ClosureSharedCache(path: try r.string(), uuid: try r.raw(16))
    }

    static func encode(_ cache: ClosureSharedCache?, into w: inout ClosureWriter) {
        guard let cache else { return w.u8(0) }
        w.u8(1)
        w.string(cache.path)
        w.raw(cache.uuid[...])
    }
}

/// Where an image of a closure lies in the shared cache it binds into: the cache's image
/// index and the image's offset from the shared region's start. Such an image is not opened,
/// mapped or fixed up by a launch: the cache holds it fixed up, and only its initializers,
/// Objective-C and thread-local writes remain.
package struct CacheSlot: Equatable, Sendable {
    package var index: Int
    package var offset: UInt64

    package init(index: Int, offset: UInt64) {
        (self.index, self.offset) = (index, offset)
    }
}
