/// Images as the Objective-C reader sees them: each readable segment a bounded view at its
/// runtime address. Every read names an address, is checked to lie inside one segment and
/// fails with a ``MachOError`` otherwise, so a pointer in the metadata can lead only into
/// the images given. Built over mapped, fixed-up memory by the loader (pointers are then
/// runtime addresses), over plain file bytes for images whose pointers need no fixup.
package struct ObjCAddressSpace: Sendable {
    /// One segment: the image it belongs to, where it starts (runtime address and offset
    /// from its image's base) and its bytes.
    package struct Region: Sendable {
        package let image: Int, start: UInt64, vmOffset: UInt64, view: ByteView

        package init(image: Int, start: UInt64, vmOffset: UInt64, view: ByteView) {
            (self.image, self.start, self.vmOffset, self.view) = (image, start, vmOffset, view)
        }
    }

    /// Sorted by start, not overlapping.
    private let regions: [Region]

    package init(regions: [Region]) { self.regions = regions.sorted { $0.start < $1.start } }

    /// Where `address` lies: its image and offset from that image's base; nil outside every segment.
    package func location(of address: UInt64) -> (image: Int, vmOffset: UInt64)? {
        guard let (region, offset) = region(containing: address, length: 1) else { return nil }
        return (region.image, region.vmOffset + UInt64(offset))
    }

    /// Objective-C metadata at `address` that cannot be right, in the image that holds it.
    package func error(at address: UInt64, _ what: String) -> MachOError { MachOError(image: location(of: address)?.image, address: address, what: what) }

    /// The region holding `[address, address + length)` and the offset of `address` in it.
    private func region(containing address: UInt64, length: Int) -> (Region, Int)? {
        let after = regions.partitionPoint { $0.start <= address }
        guard after > 0 else { return nil }
        let region = regions[after - 1]
        let offset = address - region.start
        guard offset < UInt64(region.view.count), UInt64(length) <= UInt64(region.view.count) - offset else { return nil }
        return (region, Int(offset))
    }

    /// The bounded view of `length` bytes at `address`.
    package func view(at address: UInt64, length: Int, what: String) throws(MachOError) -> ByteView {
        guard let (region, offset) = region(containing: address, length: length),
              let view = try? region.view.slice(offset, length) else {
            throw error(at: address, "\(what) (\(length) bytes) is outside every segment")
        }
        return view
    }

    package func u64(at address: UInt64, what: String) throws(MachOError) -> UInt64 {
        let view = try view(at: address, length: 8, what: what)
        return (try? view.u64(0)) ?? 0
    }

    /// A NUL-terminated string's bytes (without the NUL), at most `limit` long.
    package func cString(at address: UInt64, limit: Int = ObjCAddressSpace.maxNameLength, what: String) throws(MachOError) -> [UInt8] {
        guard let (region, offset) = region(containing: address, length: 1) else {
            throw MachOError(image: nil, address: address, what: "\(what) is outside every segment")
        }
        let available = min(limit + 1, region.view.count - offset)
        guard let end = try? region.view.firstZero(offset, available), let bytes = try? region.view.bytes(offset, end - offset) else {
            throw MachOError(image: region.image, address: address, what: "\(what) has no NUL within \(limit) bytes")
        }
        return bytes
    }

    /// The longest class, category or selector name read.
    package static let maxNameLength = 4096
}
