import LoaderCore
import MachOReader
import LaunchPlan
import RuntimeServices

/// What the thread-local step and the host services table need, found as dyld2 does:
/// `__tlv_bootstrap` and `_dyld3_host_services` looked up flat by name, and each descriptor
/// set up only while its thunk still points at the former once the fixups are written
/// (libdyld's `tlv_initialize_descriptors`).
package enum ThreadLocalDiscovery {
    /// Every image's setup. `thunkTarget`: where a descriptor's thunk points once fixed up (nil: nowhere nameable).
    package static func setups(
        graph: DependencyGraph, plans: [ImagePlan], bootstrap: BindTarget?,
        thunkTarget: (_ image: Int, _ vmOffset: UInt64) throws(LoadError) -> BindTarget?
    ) throws(LoadError) -> [ThreadLocalSetup] {
        var setups: [ThreadLocalSetup] = []
        for (index, node) in graph.nodes.enumerated() {
            guard let layout = try ThreadLocals.layout(of: node.image, plan: plans[index], path: node.path) else { continue }
            var descriptors: [UInt64] = []
            if let bootstrap {
                for slot in layout.descriptors where try thunkTarget(index, slot) == bootstrap { descriptors.append(slot) }
            }
            guard !descriptors.isEmpty else { continue }
            setups.append(ThreadLocalSetup(image: index, templateOffset: layout.templateOffset, initialSize: layout.initialSize,
                                           totalSize: layout.totalSize, descriptors: descriptors))
        }
        return setups
    }

    /// Where a descriptor slot's thunk fixup points, from an image's resolved fixups: a bind with no addend, else nil.
    package static func thunkTarget(of fixups: [UInt64: ResolvedFixup.Kind], slot: UInt64) -> BindTarget? {
        guard case let .bind(target, 0) = fixups[slot] else { return nil }
        return target
    }
}

extension FixupResolver {
    /// Where `name` is defined, as a flat-namespace bind from the main executable finds it.
    package mutating func flatDefinition(of name: String) throws(LoadError) -> BindTarget? {
        try lookup.resolve(ByteView(Array(name.utf8)), ordinal: BindFixup.ordinalFlatLookup, from: 0)
    }

    /// `_dyld3_host_services` in a writable segment of the image that defines it, if any does.
    package mutating func hostServicesSlot() throws(LoadError) -> HostServicesSlot? {
        guard case let .image(image, offset) = try flatDefinition(of: HostServicesSlot.symbol) else { return nil }
        return plans[image].isWritable(offset: offset, size: HostServicesSlot.size) ? HostServicesSlot(image: image, vmOffset: offset) : nil
    }
}
