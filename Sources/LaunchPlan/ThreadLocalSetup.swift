/// One image's thread-local variables as a launch sets them up (docs/dyld-rules.md, rule
/// 23): its template (the `__thread_data` bytes, then zeros up to the end of
/// `__thread_bss`, as offsets from the image's preferred base) and the descriptors in its
/// `__thread_vars` whose thunk the linker bound to `__tlv_bootstrap`: the launch points each
/// of those at the loader's thunk and gives it the image's key. Worked out by the slow path
/// on every launch, recorded in the closure for the fast path.
public struct ThreadLocalSetup: Equatable, Sendable {
    public var image: Int
    /// Where the template starts: the lowest `__thread_data`/`__thread_bss` address.
    public var templateOffset: UInt64
    /// Bytes copied from the image into each thread's block (the `__thread_data` part).
    public var initialSize: UInt64
    /// The block's size: the template's extent, `__thread_bss` included.
    public var totalSize: UInt64
    /// Each descriptor to set up, as the offset of its first word (thunk, then key, then offset).
    public var descriptors: [UInt64]

    public init(image: Int, templateOffset: UInt64, initialSize: UInt64, totalSize: UInt64, descriptors: [UInt64]) {
        self.image = image
        self.templateOffset = templateOffset
        self.initialSize = initialSize
        self.totalSize = totalSize
        self.descriptors = descriptors
    }

    /// The size of one descriptor: thunk, key, offset.
    public static let descriptorSize: UInt64 = 24
}

/// Where the project's libSystem keeps `_dyld3_host_services`, the table the loader fills
/// with the host process's services (threads, dlopen and its family) for code in the images.
public struct HostServicesSlot: Equatable, Sendable {
    public var image: Int
    public var vmOffset: UInt64

    public init(image: Int, vmOffset: UInt64) {
        self.image = image
        self.vmOffset = vmOffset
    }

    /// The table's size: the version, then seven function pointers (threads, dlopen and its
    /// family: CHostServices' hostservices.h).
    public static let size: UInt64 = 64
    /// The name dyld2 looks up (flat, in load order).
    public static let symbol = "_dyld3_host_services"
}
