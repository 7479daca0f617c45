import MachOReader

/// Thread-local variables (`MH_HAS_TLV_DESCRIPTORS`: `__thread_vars` descriptors, whose
/// first word dyld points at its `tlv_get_addr` after binding `__tlv_bootstrap`) are not set
/// up by this loader. Such an image is mapped and every fixup written, the descriptors'
/// binds included, exactly as dyld writes them before its TLV setup, so both launch paths
/// and `compare` treat it like any other; but its code must not run, since a thread-local
/// access would call the bound `__tlv_bootstrap` instead of `tlv_get_addr`.
public enum ThreadLocalVariables {
    /// The first image of `memory` (in load order) whose mapped header sets
    /// `MH_HAS_TLV_DESCRIPTORS`; nil when none does.
    public static func firstImageWithDescriptors(in memory: LaunchMemory) -> Int? {
        for index in memory.images.indices {
            guard let bytes = memory.mappedFileBytes(image: index, vmOffset: 0, count: MachHeader.size),
                  let header = try? MachHeader(parsing: ByteView(bytes)) else { continue }
            if header.flags.contains(.hasTLVDescriptors) { return index }
        }
        return nil
    }
}
