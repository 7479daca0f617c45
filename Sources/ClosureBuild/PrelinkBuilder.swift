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
    /// A closure bound into the shared cache makes a set of the app's own images
    /// (``PrelinkedSet/bindsIntoSharedCache``): its words that point into the cache, and the
    /// Objective-C words, are left to the runs the set's closure keeps.
    package static func build(_ closure: LaunchClosure, closurePath: String) throws(ClosureError) -> (set: PrelinkedSet, data: [UInt8]) {
        guard !closure.contentOnlyIdentity else {
            throw .incompatible(path: closurePath, what: "a content-only closure (for caches that travel) gets no prelinked set: "
                + "a set is identified by its images' inode and times; install without --content-only")
        }
        let plans = closure.images.map(\.plan)
        let cached = closure.images.map { $0.cacheSlot != nil }
        let bound = closure.sharedCache != nil
        let (offsets, rangeSize) = LaunchMemory.layout(plans, inSharedCache: cached)
        guard rangeSize <= PrelinkedSetFile.maxFileSize else {
            throw .incompatible(path: closurePath, what: "a \(rangeSize)-byte range is over the \(PrelinkedSetFile.maxFileSize)-byte limit of a prelinked set")
        }
        let own = closure.images.indices.filter { !cached[$0] }
        let files = try closure.openImages(closurePath: closurePath)
        var data = [UInt8](repeating: 0, count: Int(rangeSize))
        for index in own {
            for segment in plans[index].segments where segment.fileSize > 0 {
                let count = Int(min(segment.fileSize, segment.vmSize))
                let bytes = files[index].read(offset: segment.fileOffset, count: count)
                guard bytes.count == count else {
                    throw .stale(path: closurePath, image: plans[index].path, what: "segment \(segment.name) cannot be read whole (\(bytes.count) of \(count) bytes)")
                }
                let at = Int(offsets[index] + segment.vmOffset)
                data.replaceSubrange(at..<(at + count), with: bytes)
            }
        }
        // A cached image's words are the cache's: none is stored here (its base is never read).
        let bases = offsets.map { base + $0 }
        var fixups = [[ResolvedFixup]](repeating: [], count: plans.count), objc = fixups
        // Per own image, the binds into cached images a launch writes once the cache is mapped.
        var kept = fixups
        for index in own {
            let imageFixups = try closure.fixups(ofImage: index, closurePath: closurePath)
            let writes = closure.objc.bindRuns.isEmpty ? [] : try closure.objcWrites(ofImage: index, closurePath: closurePath)
            for fixup in imageFixups + writes {
                guard plans[index].isWritable(offset: fixup.vmOffset, size: 8) else {
                    throw .mapping(path: closurePath, image: plans[index].path,
                                   what: "a fixup at +\(hex(fixup.vmOffset)) is outside every writable segment")
                }
                store(fixup.value(imageBase: bases[index], imageBases: bases), at: Int(offsets[index] + fixup.vmOffset), in: &data)
            }
            kept[index] = imageFixups.filter { fixup in
                guard case let .bind(.image(target, _), _) = fixup.kind else { return false }
                return cached[target]
            }
            (fixups[index], objc[index]) = (imageFixups, writes)
        }
        // Rewritten by the launch: a word it binds into the cache, and with the cache every
        // Objective-C word (the closure keeps their runs); each is stored as 0 here.
        let rewritten = own.map { index in Set(kept[index].map(\.vmOffset) + (bound ? objc[index].map(\.vmOffset) : [])) }
        let later = LaunchDigest.laterWrites(objc: objc, threadLocals: closure.threadLocals.setups, imageCount: closure.images.count)
        let slideDependent = LaunchDigest.slideDependentLocations(fixups, then: later)
        var slides: [ResolvedFixup] = []
        for (position, index) in own.enumerated() {
            for location in slideDependent[index] {
                let at = offsets[index] + location
                guard !rewritten[position].contains(location) else {
                    store(0, at: Int(at), in: &data)
                    continue
                }
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
        var set = PrelinkedSet(closure: bound ? try keepingLaunchRuns(closure, kept: kept, closurePath: closurePath) : PrelinkedSet.stripped(closure),
                               base: base, pageSize: LaunchMemory.pageSize, rangeSize: rangeSize,
                               imageOffsets: offsets, slideRuns: [], slideCount: 0, slidePageIndex: .absent)
        let encoded = FixupRuns.encodeRebases(slides, plan: set.rangePlan)
        (set.slideRuns, set.slideCount) = (encoded.bytes[...], encoded.count)
        set.slidePageIndex = FixupPageIndex(rebases: encoded.pages, binds: [])
        return (set, data)
    }

    /// A closure bound into the shared cache as its set keeps it: per own image, only `kept`
    /// (its binds into cached images); the cached images' runs (their patches), the
    /// Objective-C runs and the bind-target table as they are.
    static func keepingLaunchRuns(_ closure: LaunchClosure, kept: [[ResolvedFixup]], closurePath: String) throws(ClosureError) -> LaunchClosure {
        var result = closure
        var targets = Array(closure.bindTargets)
        var targetIndex: [BindTarget: Int] = [:]
        for (index, target) in targets.enumerated() where targetIndex[target] == nil { targetIndex[target] = index }
        for index in closure.images.indices where closure.images[index].cacheSlot == nil {
            let plan = closure.images[index].plan
            result.images[index].setRuns(rebases: FixupRuns.encodeRebases([], plan: plan),
                                         binds: FixupRuns.encodeBinds(kept[index], plan: plan, targets: &targets, targetIndex: &targetIndex))
        }
        guard targets.count == closure.bindTargets.count else {
            throw .corrupt(path: closurePath, offset: 0, what: "a bind into the shared cache has a target outside the closure's table")
        }
        return result
    }

    /// The little-endian word `value` at `offset` of `data` (and its reading, ``load(at:in:)``).
    package static func store(_ value: UInt64, at offset: Int, in data: inout [UInt8]) {
        for byte in 0..<8 { data[offset + byte] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(byte))) }
    }

    package static func load(at offset: Int, in data: [UInt8]) -> UInt64 {
        (0..<8).reduce(UInt64(0)) { $0 | UInt64(data[offset + $1]) << (8 * UInt64($1)) }
    }
}
