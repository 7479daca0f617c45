import ClosureCache
import LoaderCore
import LaunchPlan
import ClosureFormat
import LaunchMemory
import MachOReader

/// Builds a prelinked set at install time from an app's closure (docs/prelinked.md): every
/// image's segments copied from the files the closure identifies into one range laid out as a
/// launch lays them out, every fixup and Objective-C write applied for the range's base, and
/// the words that then hold an address in the range recorded as slide runs.
package enum PrelinkBuilder {
    /// The address the data is fixed up for (a launch slides it to wherever it maps it).
    package static let base: UInt64 = 0x2_0000_0000

    /// The set for `closure` (read from, or written to, `closurePath`) and its data. Images
    /// that changed since the closure was built refuse the set (the closure is stale too).
    package static func build(_ closure: LaunchClosure, closurePath: String) throws(ClosureError) -> (set: PrelinkedSet, data: [UInt8]) {
        guard !closure.contentOnlyIdentity else {
            throw .incompatible(path: closurePath, what: "a content-only closure (for caches that travel) gets no prelinked set: "
                + "a set is identified by its images' inode and times; install without --content-only")
        }
        guard closure.sharedCache == nil else {
            throw .incompatible(path: closurePath, what: "a closure bound into the shared cache gets no prelinked set: install with --shared-cache none")
        }
        let plans = closure.images.map(\.plan)
        let (offsets, rangeSize) = LaunchMemory.layout(plans)
        guard rangeSize <= PrelinkedSetFile.maxFileSize else {
            throw .incompatible(path: closurePath, what: "a \(rangeSize)-byte range is over the \(PrelinkedSetFile.maxFileSize)-byte limit of a prelinked set")
        }
        let files = try closure.openImages(closurePath: closurePath)
        var data = [UInt8](repeating: 0, count: Int(rangeSize))
        for (index, (plan, file)) in zip(plans, files).enumerated() {
            for segment in plan.segments where segment.fileSize > 0 {
                let count = Int(min(segment.fileSize, segment.vmSize))
                let bytes = file.read(offset: segment.fileOffset, count: count)
                guard bytes.count == count else {
                    throw .stale(path: closurePath, image: plan.path, what: "segment \(segment.name) cannot be read whole (\(bytes.count) of \(count) bytes)")
                }
                let at = Int(offsets[index] + segment.vmOffset)
                data.replaceSubrange(at..<(at + count), with: bytes)
            }
        }
        let bases = offsets.map { base + $0 }
        var fixups: [[ResolvedFixup]] = [], objc: [[ResolvedFixup]] = []
        for index in closure.images.indices {
            let own = try closure.fixups(ofImage: index, closurePath: closurePath)
            let writes = closure.objc.bindRuns.isEmpty ? [] : try closure.objcWrites(ofImage: index, closurePath: closurePath)
            for fixup in own + writes {
                guard plans[index].isWritable(offset: fixup.vmOffset, size: 8) else {
                    throw .mapping(path: closurePath, image: plans[index].path,
                                   what: "a fixup at +\(hex(fixup.vmOffset)) is outside every writable segment")
                }
                store(fixup.value(imageBase: bases[index], imageBases: bases), at: Int(offsets[index] + fixup.vmOffset), in: &data)
            }
            fixups.append(own)
            objc.append(writes)
        }
        let later = LaunchDigest.laterWrites(objc: objc, threadLocals: closure.threadLocals.setups, imageCount: closure.images.count)
        var slides: [ResolvedFixup] = []
        for (index, locations) in LaunchDigest.slideDependentLocations(fixups, then: later).enumerated() {
            for location in locations {
                let at = offsets[index] + location
                let value = load(at: Int(at), in: data)
                let target = RebaseTarget(bits: value)
                let offset = target.offset &- base
                guard target.offset >= base, offset < rangeSize else {
                    throw .mapping(path: closurePath, image: plans[index].path, what: "the pointer at +\(hex(location)) "
                        + "(\(hex(value))) leaves the prelinked range: it cannot be slid with it")
                }
                slides.append(ResolvedFixup(vmOffset: at, kind: .rebase(targetOffset: offset, high8: target.high8)))
            }
        }
        var set = PrelinkedSet(closure: PrelinkedSet.stripped(closure), base: base, pageSize: LaunchMemory.pageSize, rangeSize: rangeSize,
                               imageOffsets: offsets, slideRuns: [], slideCount: 0, slidePageIndex: .absent)
        let encoded = FixupRuns.encodeRebases(slides, plan: set.rangePlan)
        (set.slideRuns, set.slideCount) = (encoded.bytes[...], encoded.count)
        set.slidePageIndex = FixupPageIndex(rebases: encoded.pages, binds: [])
        return (set, data)
    }

    /// The little-endian word `value` at `offset` of `data` (and its reading, ``load(at:in:)``).
    package static func store(_ value: UInt64, at offset: Int, in data: inout [UInt8]) {
        for byte in 0..<8 { data[offset + byte] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(byte))) }
    }

    package static func load(at offset: Int, in data: [UInt8]) -> UInt64 {
        (0..<8).reduce(UInt64(0)) { $0 | UInt64(data[offset + $1]) << (8 * UInt64($1)) }
    }
}
