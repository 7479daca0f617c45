/// One image's thread-local variables as a launch sets them up (docs/dyld-rules.md, rule 23):
/// its template (`__thread_data`, then zeros to the end of `__thread_bss`) and the descriptors
/// in `__thread_vars` whose thunk the linker bound to `__tlv_bootstrap`, each pointed at the
/// loader's thunk and given the image's key.
package struct ThreadLocalSetup: Equatable, Sendable {
    package var image: Int
    /// Where the template starts: the lowest `__thread_data`/`__thread_bss` address.
    package var templateOffset: UInt64
    /// Bytes copied from the image into each thread's block (the `__thread_data` part).
    package var initialSize: UInt64
    /// The block's size: the template's extent, `__thread_bss` included.
    package var totalSize: UInt64
    /// Each descriptor to set up, as the offset of its first word (thunk, then key, then offset).
    package var descriptors: [UInt64]

    package init(image: Int, templateOffset: UInt64, initialSize: UInt64, totalSize: UInt64, descriptors: [UInt64]) {
        (self.image, self.templateOffset, self.initialSize, self.totalSize) = (image, templateOffset, initialSize, totalSize)
        self.descriptors = descriptors
    }

    /// The size of one descriptor: thunk, key, offset.
    package static let descriptorSize: UInt64 = 24
}

/// Where the project's libSystem keeps `_dyld3_host_services`, the table the loader fills
/// with the host process's services (threads, dlopen and its family) for code in the images.
package struct HostServicesSlot: Equatable, Sendable {
    package var image: Int
    package var vmOffset: UInt64

    package init(image: Int, vmOffset: UInt64) {
        (self.image, self.vmOffset) = (image, vmOffset)
    }

    /// The version, then seven function pointers (CHostServices' hostservices.h).
    package static let size: UInt64 = 64
    /// The name dyld2 looks up (flat, in load order).
    package static let symbol = "_dyld3_host_services"
}
