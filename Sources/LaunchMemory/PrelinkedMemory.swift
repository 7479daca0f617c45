import MachOReader
import LaunchPlan
import LoaderSystem
import Pager

extension LaunchMemory {
    /// The memory of a prelinked set: one range reserved (where `firstSlide` puts image 0, else
    /// at random), the set's `rangeSize` bytes of data mapped over it read-write and
    /// copy-on-write from `fd` at `dataOffset` in one `mmap`, image `i` at `offsets[i]`.
    /// Protections come after the slide (``applyPrelinkedProtections()``).
    ///
    /// Page-in: the page ranges `pageIn.ranges` that receive slide stores (region offsets,
    /// page-aligned, ascending, each with its segment) are left out of the data's mapping and
    /// stay the reservation registered with the pager, with their segment's final protection,
    /// as image 0 at the region's base, their bytes at `dataOffset` + offset of `descriptor`
    /// (the set file). The caller starts the pager.
    ///
    /// `shared`: the bases of the images that lie in the shared cache's range (mapped by
    /// another thread meanwhile, then given by ``attachShared(_:)``).
    package static func mapPrelinked(plans: [ImagePlan], offsets: [UInt64], rangeSize: UInt64, fd: Int32, dataOffset: UInt64,
                                     firstSlide: UInt64?, shared: [UInt64?] = [],
                                     pageIn: (pager: FixupPager, ranges: [(range: Range<UInt64>, segment: SegmentPlan)], path: String, descriptor: ImageDescriptor)? = nil)
        throws(LoadError) -> LaunchMemory {
        let base = try reserveRegion(size: rangeSize, first: plans.first, firstSlide: firstSlide)
        let images = plans.indices.map { index in
            if index < shared.count, let cachedBase = shared[index] { return Image(plan: plans[index], base: cachedBase, fileLength: 0, inSharedCache: true) }
            return Image(plan: plans[index], base: base + offsets[index], fileLength: 0)
        }
        let memory = LaunchMemory(mappedRegion: base, size: rangeSize, images: images, pager: pageIn?.pager)
        let page = UnsafeMemory.pageSize
        var cursor: UInt64 = 0
        /// Maps the data from `cursor` up to `end` (offsets in the region).
        func mapData(upTo end: UInt64) throws(LoadError) {
            guard end > cursor else { return }
            try asMappingError(plans.first?.path ?? "?", "the prelinked set's data") { () throws(LoadError) in
                try UnsafeMemory.mapFile(fd: fd, offset: dataOffset + cursor, size: end - cursor, at: base + cursor)
            }
        }
        do throws(LoadError) {
            if let pageIn {
                try pageIn.pager.registerRegion(start: base, size: rangeSize)
                for (range, segment) in pageIn.ranges {
                    guard range.lowerBound >= cursor, range.lowerBound % page == 0, range.count % Int(page) == 0, range.upperBound <= rangeSize,
                          segment.isWritable, range.lowerBound >= segment.vmOffset,
                          range.upperBound <= segment.vmOffset + (segment.vmSize + page - 1) / page * page else {
                        throw LoadError.mapping(image: pageIn.path, reason: "page-in range +\(hex(range.lowerBound)) is not whole pages of one writable segment after the one before")
                    }
                    try mapData(upTo: range.lowerBound)
                    try asMappingError(pageIn.path, "page-in reservation") { () throws(LoadError) in
                        try UnsafeMemory.protect(address: base + range.lowerBound, size: UInt64(range.count), finalProtection(segment))
                    }
                    try pageIn.pager.register(start: base + range.lowerBound, size: UInt64(range.count), image: 0, path: pageIn.path,
                                              imageBase: base, vmOffset: range.lowerBound, fileOffset: dataOffset + range.lowerBound,
                                              fileSize: rangeSize - range.lowerBound, descriptor: pageIn.descriptor, inRegion: true)
                    cursor = range.upperBound
                }
            }
            try mapData(upTo: rangeSize)
        } catch {
            memory.release()
            throw error
        }
        return memory
    }

    /// A writer over the whole region, read as the one image `plan` describes (its segments
    /// the images' segments at their places in the region): the slide runs' writer.
    package func regionWriter(_ plan: ImagePlan) -> ImageWriter {
        ImageWriter(Image(plan: plan, base: regionBase, fileLength: 0))
    }

    /// The range of a prelinked set slid for this boot, mapped before its set's metadata is
    /// decoded: `size` bytes of `fd` at `dataOffset`, read-only and copy-on-write at exactly
    /// `base` in one `mmap` that is also the reservation, then given `protections` (offsets in
    /// the range). Nil when that range is not free. ``adopt(plans:offsets:)`` makes it a
    /// launch's memory; until then ``release()`` returns it.
    package struct SlidRange: Sendable {
        package let base: UInt64
        package let size: UInt64

        package static func map(fd: Int32, dataOffset: UInt64, size: UInt64, base: UInt64,
                                protections: [(range: Range<UInt64>, protection: VMProtection)],
                                path: String) throws(LoadError) -> SlidRange? {
            switch UnsafeMemory.mapFileIfFree(fd: fd, offset: dataOffset, size: size, at: base) {
            case .success(false): return nil
            case let .failure(failure): throw .mapping(image: path, reason: "the slid set's data: \(failure)")
            case .success(true): break
            }
            let range = SlidRange(base: base, size: size)
            do throws(LoadError) {
                try LaunchMemory.protect(base: base, protections, path: path)
            } catch {
                range.release()
                throw error
            }
            return range
        }

        /// The launch's memory over this range: images `plans` at `offsets`.
        package func adopt(plans: [ImagePlan], offsets: [UInt64]) -> LaunchMemory {
            LaunchMemory(mappedRegion: base, size: size, images: zip(plans, offsets).map { Image(plan: $0, base: base + $1, fileLength: 0) }, pager: nil)
        }

        package func release() { UnsafeMemory.unmap(address: base, size: size) }
    }

    /// The protection changes a prelinked region of images `plans` at `offsets` in a range of
    /// `rangeSize` bytes needs from its mapping's protection `mapped` (read-write, or read-only
    /// for a set slid for this boot): each segment's ``finalProtection(_:)``, gaps and the tail
    /// none, adjacent ranges of one protection merged, those already `mapped` left out.
    /// Offsets from the region's base.
    package static func prelinkedProtections(plans: [ImagePlan], offsets: [UInt64], rangeSize: UInt64,
                                             from mapped: VMProtection) -> [(range: Range<UInt64>, protection: VMProtection)] {
        let page = UnsafeMemory.pageSize
        var ranges: [(range: Range<UInt64>, protection: VMProtection)] = []
        func add(_ start: UInt64, _ end: UInt64, _ protection: VMProtection) {
            guard end > start else { return }
            if let last = ranges.last, last.range.upperBound == start, last.protection == protection {
                ranges[ranges.count - 1].range = last.range.lowerBound..<end
            } else {
                ranges.append((start..<end, protection))
            }
        }
        let none: VMProtection = []
        var cursor: UInt64 = 0
        for (plan, offset) in zip(plans, offsets) {
            for segment in plan.segments.sorted(by: { $0.vmOffset < $1.vmOffset }) {
                let start = offset + segment.vmOffset
                let end = start + (segment.vmSize + page - 1) / page * page
                guard start >= cursor else { continue }
                add(cursor, start, none)
                add(start, end, finalProtection(segment))
                cursor = end
            }
        }
        add(cursor, rangeSize, none)
        return ranges.filter { $0.protection != mapped }
    }

    /// Gives a prelinked region mapped read-write its protections
    /// (``prelinkedProtections(plans:offsets:rangeSize:from:)``): one `mprotect` per range.
    /// The shared cache's pages opened for its patches get their protection back first.
    package func applyPrelinkedProtections() throws(LoadError) {
        try closePatchedPages()
        let own = images.filter { !$0.inSharedCache }
        try Self.protect(base: regionBase, Self.prelinkedProtections(plans: own.map(\.plan), offsets: own.map { $0.base - regionBase }, rangeSize: regionSize,
                                                                 from: .readWrite), path: images.first?.plan.path ?? "?")
    }

    /// One `mprotect` per range of `protections` (offsets from `base`).
    static func protect(base: UInt64, _ protections: [(range: Range<UInt64>, protection: VMProtection)], path: String) throws(LoadError) {
        for (range, protection) in protections {
            try asMappingError(path, "mprotect of the prelinked range +\(hex(range.lowerBound))") { () throws(LoadError) in
                try UnsafeMemory.protect(address: base + range.lowerBound, size: UInt64(range.count), protection)
            }
        }
    }
}
