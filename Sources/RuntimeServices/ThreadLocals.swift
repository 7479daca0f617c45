import CThreadLocal
import LaunchPlan
import MachOReader
import LaunchMemory

/// The thread-local-variable step both launch paths end their fixups with, and the host
/// services table (docs/dyld-rules.md, rule 23). dyld (libdyld's `tlv_initialize_descriptors`,
/// dyld4 `RuntimeState::setUpTLVs`) gives each image with thread-local variables a key and
/// points every descriptor whose thunk is still `__tlv_bootstrap` at its `tlv_get_addr`.
package enum ThreadLocals {
    static let regular = Section.typeThreadLocalRegular, zerofill = Section.typeThreadLocalZerofill
    static let variables = Section.typeThreadLocalVariables

    /// Whether `image` has `__thread_vars` (dyld's `MH_HAS_TLV_DESCRIPTORS`): without, the step and its lookup are skipped.
    package static func hasDescriptors(_ image: MachOImage) -> Bool {
        image.sections.contains { $0.type == variables }
    }

    /// An image's thread-local template (start, initialized bytes, total bytes) and descriptor
    /// slots, offsets from its preferred base; nil without descriptors. Either outside the
    /// writable segments is malformed.
    package static func layout(of image: MachOImage, plan: ImagePlan, path: String) throws(LoadError)
        -> (templateOffset: UInt64, initialSize: UInt64, totalSize: UInt64, descriptors: [UInt64])? {
        let base = plan.preferredBase
        let sections = image.sections
        let descriptorSections = sections.filter { $0.type == variables }
        guard !descriptorSections.isEmpty else { return nil }
        func writable(_ section: Section) throws(LoadError) -> Range<UInt64> {
            let start = section.address &- base
            guard section.address >= base, plan.isWritable(offset: start, size: section.size) else {
                throw .unusable(path: path, reason: "section \(section.segmentName),\(section.name) is outside the image's writable segments")
            }
            return start..<(start + section.size)
        }
        var descriptors: [UInt64] = []
        for section in descriptorSections {
            let range = try writable(section), size = ThreadLocalSetup.descriptorSize
            descriptors += (0..<(range.upperBound - range.lowerBound) / size).map { range.lowerBound + $0 * size }
        }
        var start = UInt64.max, initialEnd: UInt64 = 0, end: UInt64 = 0
        for section in sections where section.type == regular || section.type == zerofill {
            let range = try writable(section)
            start = min(start, range.lowerBound)
            end = max(end, range.upperBound)
            if section.type == regular { initialEnd = max(initialEnd, range.upperBound) }
        }
        guard start != .max else { return (0, 0, 0, descriptors) }
        return (start, initialEnd > start ? initialEnd - start : 0, end - start, descriptors)
    }

    /// Sets up every image's thread-local variables in `memory` (keys released with it), and
    /// fills the host services table when the launch has one.
    package static func apply(_ setups: [ThreadLocalSetup], hostServices: HostServicesSlot?, memory: LaunchMemory) throws(LoadError) {
        if let hostServices {
            let words = UnsafeHostServices.words()
            try memory.checkWritable(image: hostServices.image, vmOffset: hostServices.vmOffset, count: HostServicesSlot.size)
            precondition(UInt64(words.count) * 8 == HostServicesSlot.size, "hostservices.h and HostServicesSlot agree")
            for (position, word) in words.enumerated() {
                try memory.store(word, image: hostServices.image, vmOffset: hostServices.vmOffset + UInt64(position) * 8)
            }
        }
        guard !setups.isEmpty else { return }
        // The address every set-up descriptor's thunk holds.
        let thunk = dyld3_tlv_thunk()
        for setup in setups {
            let image = memory.images[setup.image]
            if setup.totalSize > 0 {
                try memory.checkWritable(image: setup.image, vmOffset: setup.templateOffset, count: setup.totalSize)
            }
            let key = memory.makeThreadLocalKey(image: setup.image, template: image.base &+ setup.templateOffset, initialSize: setup.initialSize, totalSize: setup.totalSize)
            guard key >= 0 else {
                throw .mapping(image: image.plan.path, reason: "thread-local variables: \(DYLD3_TLV_KEYS) images with them are loaded in this process, the most it holds")
            }
            for descriptor in setup.descriptors {
                try memory.store(thunk, image: setup.image, vmOffset: descriptor)
                try memory.store(UInt64(key), image: setup.image, vmOffset: descriptor + 8)
            }
        }
    }
}
