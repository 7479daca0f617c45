import LoaderCore
import MachOReader
import LaunchPlan
import LaunchMemory

/// dyld2's walk over raw bytes of the fixup chains in the formats every x86_64 and arm64 (not
/// arm64e) image uses, `DYLD_CHAINED_PTR_64` and `_64_OFFSET`: each rebase stored into the
/// mapped image as it is met, each bind noted for the resolver. Per pointer: one load, one
/// bounds compare, one store or one append.
///
/// It answers only for an image it walks whole. At anything else (another format, a page
/// with several chains, a chain leaving its page or its segment's data, an import ordinal
/// past the table, data not inside one writable segment of the mapping) it returns nil, and
/// ``ChainedPointerCursor`` walks the image again from the start: it stores the same values
/// and fails where and how the image is wrong.
enum UnsafeChainedRebaseWalk {
    /// Walks every chain of `image`, storing rebases through `writer` and appending binds to
    /// `binds`: the number of rebases stored, or nil where the checked cursor must take over.
    static func walk(
        _ chains: ChainedFixupChains, image: MachOImage, preferredBase: UInt64, writer: ImageWriter,
        binds: inout [ChainedBindSite]
    ) -> Int? {
        let importCount = UInt64(chains.importTable.count)
        var rebases = 0
        for starts in chains.segments {
            guard starts.pointerFormat == .pointer64 || starts.pointerFormat == .pointer64Offset,
                  starts.segmentIndex < image.segments.count else { return nil }
            let segment = image.segments[starts.segmentIndex]
            let pageSize = Int(starts.pageSize)
            guard pageSize > 0, segment.fileSize >= 8, let data = try? image.view.slice(offset: segment.fileOffset, size: segment.fileSize)
            else { return nil }
            let segmentOffset = segment.vmAddress &- preferredBase
            // Every location is at most data.count - 8 bytes into the segment.
            let lastLocation = UInt64(data.count - 8)
            guard segmentOffset <= UInt64.max - lastLocation,
                  writer.accepts(start: segmentOffset, last: segmentOffset + lastLocation) else { return nil }
            // A rebase target is a vm address for DYLD_CHAINED_PTR_64, an offset for _64_OFFSET.
            let targetBias = starts.pointerFormat == .pointer64 ? preferredBase : 0
            let destination = writer.base &+ segmentOffset
            let walked = unsafe data.withUnsafeBytes { raw -> Bool in
                guard let source = raw.baseAddress else { return false }
                let end = raw.count - 8
                for (page, first) in starts.pageStarts.enumerated() {
                    if first == ChainedStartsInSegment.startNone { continue }
                    guard first & ChainedStartsInSegment.startMulti == 0, Int(first) < pageSize else { return false }
                    let pageStart = page * pageSize
                    var offsetInPage = Int(first)
                    while true {
                        let offset = pageStart + offsetInPage
                        guard offset <= end else { return false }
                        let pointer = unsafe source.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                        if pointer >> 63 == 0 {
                            let target = pointer & 0xF_FFFF_FFFF
                            let high8 = (pointer >> 36) & 0xFF
                            // Inside the range the writer accepted above.
                            unsafe UnsafeMutableRawPointer(bitPattern: UInt(destination &+ UInt64(offset)))!.storeBytes(
                                of: RebaseTarget(offset: target &- targetBias, high8: UInt8(high8)).value(imageBase: writer.base), as: UInt64.self)
                            rebases += 1
                        } else {
                            let ordinal = pointer & 0xFF_FFFF
                            guard ordinal < importCount else { return false }
                            binds.append(ChainedBindSite(
                                vmOffset: segmentOffset &+ UInt64(offset), importOrdinal: Int(ordinal),
                                addend: Int64((pointer >> 24) & 0xFF)))
                        }
                        let next = Int((pointer >> 51) & 0xFFF)
                        if next == 0 { break }
                        offsetInPage += next * 4
                        guard offsetInPage < pageSize else { return false }
                    }
                }
                return true
            }
            guard walked else { return nil }
        }
        return rebases
    }
}
