import MachOReader

extension LaunchMemory {
    /// The mapped images as an ``ObjCAddressSpace``: each readable segment a view of its mapped
    /// (fixed-up) bytes, uncopied. The views must not outlive the memory, nor be read while it
    /// is written: the Objective-C step reads everything first, then writes.
    package func objcAddressSpace() -> ObjCAddressSpace {
        var regions: [ObjCAddressSpace.Region] = []
        for (index, image) in images.enumerated() {
            for segment in image.plan.segments where segment.protection.contains(.read) && segment.vmSize > 0 {
                guard segment.vmSize <= UInt64(Int.max), let start = unsafe UnsafeRawPointer(bitPattern: UInt(image.base + segment.vmOffset)) else { continue }
                // The memory stays mapped while this LaunchMemory lives; the storage releases nothing.
                let storage = unsafe ByteStorage(unsafeStart: start, count: Int(segment.vmSize)) { _, _ in }
                regions.append(ObjCAddressSpace.Region(image: index, start: image.base + segment.vmOffset, vmOffset: segment.vmOffset, view: ByteView(storage)))
            }
        }
        return ObjCAddressSpace(regions: regions)
    }
}
