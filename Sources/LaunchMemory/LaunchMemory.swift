import MachOReader
import LaunchPlan
import LoaderSystem
import Pager

/// The memory of one launch: every image mapped into one reserved region. Releasing it
/// (``release()`` or deinit) unmaps everything, so one process can launch many times.
package final class LaunchMemory {
    /// One image as mapped.
    package struct Image: Sendable {
        package let plan: ImagePlan
        /// Where the image's preferred base was mapped.
        package let base: UInt64
        /// The size of the file it was mapped from.
        let fileLength: UInt64
        /// Whether it lies in the shared cache's range (mapped, fixed up and protected with it).
        package var inSharedCache = false
        /// `base - preferredBase` (wrapping): what a rebase adds.
        package var slide: UInt64 { base &- plan.preferredBase }
    }

    package private(set) var images: [Image] = []
    /// Page-in linking's pager, when pages were registered with it (released with the memory).
    package let pager: FixupPager?
    /// Per image, per segment: the page ranges (offsets from the image's base) reserved
    /// without contents and filled by ``pager`` on first touch; empty when nothing is paged in
    /// (not an array of empty arrays: its first allocation would cost a fresh process the
    /// runtime's search for `Range`'s `Comparable` requirement).
    package let pagedRanges: [[[Range<UInt64>]]]
    /// ``pagedRanges`` of image `index`, per segment; empty when none of it is paged in.
    package func pagedRanges(ofImage index: Int) -> [[Range<UInt64>]] { index < pagedRanges.count ? pagedRanges[index] : [] }
    /// Per image, per segment: wholly reserved for page-in (its protection final from the start).
    package let deferred: [[Bool]]
    /// The reserved region holding every image.
    package let regionBase: UInt64
    package let regionSize: UInt64
    /// The shared cache's range, when images lie in it (``attachShared(_:)`` when another
    /// thread mapped it beside this memory).
    package private(set) var sharedRange: SlidRange?
    /// Read-only pages of the cache made writable for its patches (``openForPatches(_:)``).
    private var patchedPages: [(start: UInt64, size: UInt64)] = []
    private var released = false

    /// The host's page size: the unit of mapping, protection and page-in.
    package static var pageSize: UInt64 { UnsafeMemory.pageSize }

    /// Images are laid out in order, page-aligned, back to back (as the shared cache packs its
    /// dylibs): no guard page, so a prelinked set of the same layout needs no `mprotect` per
    /// image. An image's last segment is `__LINKEDIT` (read-only): a write running off an
    /// image's data still faults before the next image.
    /// Images `inSharedCache` take no room (they lie in the cache's range).
    package static func layout(_ plans: [ImagePlan], inSharedCache: [Bool] = []) -> (offsets: [UInt64], size: UInt64) {
        let page = UnsafeMemory.pageSize
        var offsets: [UInt64] = []
        var cursor: UInt64 = 0
        for (index, plan) in plans.enumerated() {
            offsets.append(cursor)
            if index < inSharedCache.count, inSharedCache[index] { continue }
            cursor += max(page, (plan.vmSize + page - 1) / page * page)
        }
        return (offsets, cursor)
    }

    /// Reserves the region and maps every image into it, read-write (fixups come next).
    /// - Parameters:
    ///   - descriptors: per image, the open file whose identity was checked; nil opens each plan's path.
    ///   - handOff: the descriptors from `handOff.first` on, taken as another thread opens and
    ///     identifies them; an image the hand-off closed before is a mapping error (the opener
    ///     has the real one).
    ///   - firstSlide: forces the first image's slide; nil picks a random page-aligned one.
    ///   - pageIn: the page ranges `ranges` (per image, per segment, page-aligned offsets from
    ///     the image's base) are reserved without contents, with their segment's final
    ///     protection, and registered with `pager`, which the caller then starts. Needs `descriptors`.
    ///   - readAhead: each file this opens is read ahead (``ImagePlan/readAheadRange(deferred:)``).
    ///   - shared: the shared cache's range, mapped; the images it has a base for lie there and
    ///     are not mapped (their descriptors are taken and left). Released with this memory. Its
    ///     range nil: mapped by another thread meanwhile, then given by ``attachShared(_:)``.
    package init(plans: [ImagePlan], descriptors: [ImageDescriptor]? = nil, handOff: DescriptorHandOff? = nil, firstSlide: UInt64?,
                pageIn: (pager: FixupPager, ranges: [[[Range<UInt64>]]])? = nil, readAhead: Bool = false,
                shared: SharedImages? = nil) throws(LoadError) {
        pager = pageIn?.pager
        sharedRange = shared?.range
        let page = UnsafeMemory.pageSize
        pagedRanges = pageIn?.ranges ?? []
        deferred = pagedRanges.isEmpty ? plans.map { Array(repeating: false, count: $0.segments.count) } : zip(plans, pagedRanges).map { plan, ranges in
            zip(plan.segments, ranges).map { segment, ranges in
                ranges.count == 1 && ranges[0] == segment.vmOffset..<(segment.vmOffset + (segment.vmSize + page - 1) / page * page)
            }
        }
        let sharedBases = shared?.bases ?? []
        let inSharedCache = plans.indices.map { $0 < sharedBases.count && sharedBases[$0] != nil }
        let (offsets, laidOut) = LaunchMemory.layout(plans, inSharedCache: inSharedCache)
        // The region starts with the first image not in the cache (a page when all are).
        let size = max(laidOut, page), first = plans.indices.first { !inSharedCache[$0] }.map { plans[$0] }
        do throws(LoadError) {
            regionBase = try LaunchMemory.reserveRegion(size: size, first: first, firstSlide: first == nil ? nil : firstSlide)
        } catch {
            shared?.range?.release()
            throw error
        }
        regionSize = size
        do throws(LoadError) {
            // Page-in: the reservation is registered whole, once; the ranges wholly
            // reserved for page-in are then only given their protection.
            try pager?.registerRegion(start: regionBase, size: size)
            for (index, (plan, offset)) in zip(plans, offsets).enumerated() {
                let file: ImageDescriptor
                if let handOff, index >= handOff.first {
                    guard let handed = handOff.take(index) else {
                        throw LoadError.mapping(image: plan.path, reason: "not opened: opening the images stopped before it")
                    }
                    file = handed
                } else if index < sharedBases.count, sharedBases[index] != nil {
                    file = ImageDescriptor.inSharedCache(plan.path)
                } else if let descriptors {
                    file = descriptors[index]
                } else {
                    do throws(LoadError) {
                        file = try ImageDescriptor.open(plan.path)
                    } catch {
                        throw LoadError.mapping(image: plan.path, reason: "open: \(error)")
                    }
                    if readAhead, let range = plan.readAheadRange(deferred: deferred[index]) { file.readAhead(range) }
                }
                // An image in the cache lies in its range: nothing of it is mapped here.
                if index < sharedBases.count, let base = sharedBases[index] {
                    images.append(Image(plan: plan, base: base, fileLength: file.status.size, inSharedCache: true))
                    continue
                }
                let image = Image(plan: plan, base: regionBase + offset, fileLength: file.status.size)
                try LaunchMemory.map(image, file: file, paged: pagedRanges(ofImage: index), deferred: deferred[index], pager: pager, index: index)
                images.append(image)
            }
        } catch {
            release()
            throw error
        }
    }

    /// The memory of a region of `size` bytes at `base` mapped whole by the caller (a prelinked
    /// set): `images` lie in it; `pager` pages part of it in.
    init(mappedRegion base: UInt64, size: UInt64, images: [Image], pager: FixupPager? = nil) {
        self.pager = pager
        sharedRange = nil
        pagedRanges = []
        deferred = images.map { $0.plan.segments.map { _ in false } }
        regionBase = base
        regionSize = size
        self.images = images
    }

    /// Where a random base lies: the middle of the user address space of every 64-bit
    /// platform the launches run on (47-bit user space and more).
    package static let randomBases: ClosedRange<UInt64> = 0x1000_0000_0000...0x5000_0000_0000

    /// A random page in the middle of the user address space (ASLR): where a launch puts
    /// its region, and a set slid for a boot its range.
    package static func randomBase(pageSize page: UInt64) -> UInt64 {
        UInt64.random(in: randomBases) / page * page
    }

    /// Reserves `size` bytes of address space for a launch whose first image is `first`: where
    /// `firstSlide` puts that image, else at a random page-aligned address (ASLR), else anywhere.
    static func reserveRegion(size: UInt64, first: ImagePlan?, firstSlide: UInt64?) throws(LoadError) -> UInt64 {
        let page = UnsafeMemory.pageSize
        let hint: UInt64
        if let firstSlide, let first {
            hint = first.preferredBase &+ firstSlide
            guard hint % page == 0 else {
                throw .mapping(image: first.path, reason: "slide \(hex(firstSlide)) is not page-aligned")
            }
        } else {
            hint = randomBase(pageSize: page)
        }
        var reservation = UnsafeMemory.reserve(size: size, at: hint)
        if case .failure = reservation, firstSlide == nil {
            reservation = UnsafeMemory.reserve(size: size, at: 0)
        }
        switch reservation {
        case let .success(base): return base
        case let .failure(reason):
            throw .mapping(image: first?.path ?? "?", reason: "cannot reserve \(size) bytes at \(hex(hint)): \(reason)")
        }
    }

    /// Runs `body`; its failure becomes a mapping error of `image`: "`what`: the failure".
    static func asMappingError(_ image: String, _ what: @autoclosure () -> String, _ body: () throws(LoadError) -> Void) throws(LoadError) {
        do {
            try body()
        } catch {
            throw .mapping(image: image, reason: "\(what()): \(error)")
        }
    }

    /// Maps each segment of `image` from `file`. Read-write segments of whole file pages, back to
    /// back in file and memory (`__DATA_CONST`, `__DATA`), take one `mmap`; a segment nothing
    /// writes is mapped final (``isMappedFinal(_:fileLength:)``); the rest read-write, the last
    /// page's tail zeroed, zero-fill pages anonymous. Page-in ranges are then mapped over it
    /// without contents and registered (a segment they cover wholly is only reserved).
    private static func map(_ image: Image, file: ImageDescriptor, paged: [[Range<UInt64>]], deferred: [Bool], pager: FixupPager?,
                            index: Int) throws(LoadError) {
        let page = UnsafeMemory.pageSize
        let fd = file.fd
        var overlays: [(range: Range<UInt64>, segment: SegmentPlan, inRegion: Bool)] = []
        var run: (address: UInt64, fileOffset: UInt64, size: UInt64, first: String)?
        func mapRun() throws(LoadError) {
            guard let pending = run else { return }
            run = nil
            try asMappingError(image.plan.path, "segment \(pending.first)") { () throws(LoadError) in
                try UnsafeMemory.mapFile(fd: fd, offset: pending.fileOffset, size: pending.size, at: pending.address)
            }
        }
        for (position, segment) in image.plan.segments.enumerated() {
            let address = image.base + segment.vmOffset
            guard address % page == 0, segment.fileOffset % page == 0 else {
                throw .mapping(image: image.plan.path, reason: "segment \(segment.name) is not page-aligned")
            }
            let mappedSize = (segment.vmSize + page - 1) / page * page
            let filePages = (segment.fileSize + page - 1) / page * page
            if pager != nil, position < paged.count, !paged[position].isEmpty {
                overlays += paged[position].map { ($0, segment, deferred[position]) }
                if deferred[position] { continue }
            }
            if segment.isWritable, segment.fileSize > 0, segment.fileSize == mappedSize {
                if let pending = run, pending.address + pending.size == address, pending.fileOffset + pending.size == segment.fileOffset {
                    run?.size += segment.fileSize
                } else {
                    try mapRun()
                    run = (address, segment.fileOffset, segment.fileSize, segment.name)
                }
                continue
            }
            try mapRun()
            let final = isMappedFinal(segment, fileLength: image.fileLength) ? finalProtection(segment) : nil
            if filePages > 0 {
                try asMappingError(image.plan.path, "segment \(segment.name)") { () throws(LoadError) in
                    try UnsafeMemory.mapFile(fd: fd, offset: segment.fileOffset, size: filePages, at: address, finalProtection: final)
                }
            }
            // The last file page may carry bytes past the segment's end: zero them (a page
            // mapped final ends at the end of the file, where the kernel gives zeros).
            if final == nil {
                UnsafeMemory.zero(address: address + segment.fileSize, size: min(filePages, mappedSize) - segment.fileSize)
            }
            if mappedSize > filePages {
                try asMappingError(image.plan.path, "segment \(segment.name) zero fill") { () throws(LoadError) in
                    try UnsafeMemory.mapZeros(size: mappedSize - filePages, at: address + filePages)
                }
            }
        }
        try mapRun()
        guard let pager else { return }
        for (range, segment, inRegion) in overlays {
            let address = image.base + range.lowerBound
            let size = UInt64(range.count)
            let intoSegment = range.lowerBound - segment.vmOffset
            guard range.lowerBound % page == 0, size % page == 0, range.lowerBound >= segment.vmOffset,
                  range.upperBound - segment.vmOffset <= (segment.vmSize + page - 1) / page * page else {
                throw .mapping(image: image.plan.path, reason: "segment \(segment.name): page-in range +\(hex(range.lowerBound)) is not whole pages of it")
            }
            // A segment wholly paged in is still the registered reservation: it only needs its
            // protection. Pages of a segment mapped from the file are mapped over again,
            // without contents, and registered on their own.
            try asMappingError(image.plan.path, "segment \(segment.name) page-in reservation") { () throws(LoadError) in
                let final = finalProtection(segment)
                if inRegion {
                    try UnsafeMemory.protect(address: address, size: size, final)
                } else {
                    try UnsafeMemory.mapZeros(size: size, at: address, protection: final)
                }
            }
            do throws(LoadError) {
                try pager.register(start: address, size: size, image: index, path: image.plan.path, imageBase: image.base,
                                   vmOffset: range.lowerBound, fileOffset: segment.fileOffset + intoSegment,
                                   fileSize: segment.fileSize > intoSegment ? segment.fileSize - intoSegment : 0, descriptor: file,
                                   sliceOffset: image.plan.segments.first { $0.name == "__TEXT" }?.fileOffset ?? 0, inRegion: inRegion)
            } catch {
                guard case let .mapping(_, reason) = error else { throw error }
                throw .mapping(image: image.plan.path, reason: "segment \(segment.name) page-in: \(reason)")
            }
        }
    }

    /// A segment's protection once fixups are done: `__DATA_CONST` loses write.
    package static func finalProtection(_ segment: SegmentPlan) -> VMProtection {
        segment.protection.intersection(segment.readOnlyAfterFixups ? .readExecute : .readWriteExecute)
    }

    /// A segment nothing writes, wholly backed by file pages, is mapped with its final
    /// protection at once (no mprotect later): its size whole pages, or its last page partly
    /// past the end of the file (`__LINKEDIT`), where the kernel maps zeros.
    static func isMappedFinal(_ segment: SegmentPlan, fileLength: UInt64) -> Bool {
        let page = UnsafeMemory.pageSize
        let mappedSize = (segment.vmSize + page - 1) / page * page
        let filePages = (segment.fileSize + page - 1) / page * page
        let (end, overflow) = segment.fileOffset.addingReportingOverflow(segment.fileSize)
        return !segment.isWritable && mappedSize == filePages
            && (segment.fileSize % page == 0 || (!overflow && end == fileLength))
    }

    /// Gives every segment its final protection: `__DATA_CONST` becomes read-only. Segments
    /// mapped final, deferred ones (reserved with it) and plain read-write ones need no call.
    package func applyProtections() throws(LoadError) {
        let page = UnsafeMemory.pageSize
        try closePatchedPages()
        for (index, image) in images.enumerated() where !image.inSharedCache {
            for (position, segment) in image.plan.segments.enumerated()
            where !LaunchMemory.isMappedFinal(segment, fileLength: image.fileLength) && !deferred[index][position] {
                let final = LaunchMemory.finalProtection(segment)
                if final == .readWrite { continue }
                let size = (segment.vmSize + page - 1) / page * page
                try LaunchMemory.asMappingError(image.plan.path, "mprotect \(segment.name)") { () throws(LoadError) in
                    try UnsafeMemory.protect(address: image.base + segment.vmOffset, size: size, final)
                }
            }
        }
    }

    /// Gives the cache's pages ``openForPatches(_:)`` opened their protection back.
    func closePatchedPages() throws(LoadError) {
        for (start, size) in patchedPages {
            try LaunchMemory.asMappingError(images.first?.plan.path ?? "?", "mprotect after the cache's patches") { () throws(LoadError) in
                try UnsafeMemory.protect(address: start, size: size, .read)
            }
        }
        patchedPages = []
    }

    /// The shared cache's range, mapped by another thread while this memory mapped the rest,
    /// at the base this memory's cached images were given: released with this memory.
    package func attachShared(_ range: SlidRange) {
        precondition(sharedRange == nil, "the shared cache's range is attached once")
        sharedRange = range
    }

    /// Makes the pages `pages` (per image, offsets from its base) of the cache's images
    /// writable where the cache maps them read-only (`__DATA_CONST`), for the patches a closure
    /// writes there; ``applyProtections()`` gives them their protection back.
    package func openForPatches(_ pages: [[UInt64]]) throws(LoadError) {
        let page = UnsafeMemory.pageSize
        for (index, offsets) in pages.enumerated() where index < images.count && images[index].inSharedCache {
            let image = images[index]
            var run: Range<UInt64>?
            func flush() throws(LoadError) {
                guard let pending = run else { return }
                run = nil
                try LaunchMemory.asMappingError(image.plan.path, "mprotect for the cache's patches") { () throws(LoadError) in
                    try UnsafeMemory.protect(address: image.base + pending.lowerBound, size: UInt64(pending.count), .readWrite)
                }
                patchedPages.append((image.base + pending.lowerBound, UInt64(pending.count)))
            }
            for offset in offsets.sorted() {
                let start = offset / page * page
                guard let segment = image.plan.segments.first(where: { start >= $0.vmOffset && start - $0.vmOffset < $0.vmSize }),
                      segment.isWritable, LaunchMemory.finalProtection(segment) != .readWrite else { continue }
                if let pending = run, pending.upperBound == start { run = pending.lowerBound..<(start + page); continue }
                if let pending = run, pending.contains(start) { continue }
                try flush()
                run = start..<(start + page)
            }
            try flush()
        }
    }

    /// Unmaps everything, then ends the page-in region and closes its descriptors (a fill in
    /// progress finds its range gone). Safe to call twice.
    package func release() {
        guard !released else { return }
        released = true
        // The runtime services end first: the host services table's address is in this memory,
        // so its registration ends before another launch can map and register the same address.
        runtime?.release()
        runtime = nil
        UnsafeMemory.unmap(address: regionBase, size: regionSize)
        sharedRange?.release()
        pager?.close()
    }

    /// What the runtime services keep for this launch (its `dlopen` loader, its images'
    /// thread-local keys: the RuntimeServices module), released first by ``release()``.
    package var runtime: (any LaunchRuntime)?

    deinit { release() }
}

extension LaunchMemory {
    /// The shared cache's range as a launch maps it, and per image of the launch its base in
    /// that range (nil for an image mapped from its own file).
    package struct SharedImages: Sendable {
        /// Nil while another thread maps it (``LaunchMemory/attachShared(_:)``).
        package let range: SlidRange?
        package let bases: [UInt64?]

        package init(range: SlidRange?, bases: [UInt64?]) {
            self.range = range
            self.bases = bases
        }
    }
}

extension [LaunchMemory] {
    /// The base of image `index` of these memories' images taken in order as one list (the
    /// images the `dlopen`s of a launch added, each `dlopen`'s memory after the one before).
    package func base(ofImage index: Int) -> UInt64 {
        var local = index
        for memory in self {
            if local < memory.images.count { return memory.images[local].base }
            local -= memory.images.count
        }
        preconditionFailure("image \(index) lies in none of \(count) memories")
    }
}

/// What a module above the memory keeps for one launch, held by its ``LaunchMemory`` and
/// given back when the memory is released, before anything is unmapped.
package protocol LaunchRuntime: AnyObject {
    func release()
}

extension LaunchMemory {
    /// A copy of `count` bytes at `vmOffset` from image `index`'s base, when they lie in one
    /// readable segment's file bytes (a header read back from the mapped `__TEXT`); else nil.
    package func mappedFileBytes(image index: Int, vmOffset: UInt64, count: Int) -> [UInt8]? {
        let image = images[index]
        for segment in image.plan.segments where segment.protection.contains(.read) {
            if vmOffset >= segment.vmOffset, UInt64(count) <= segment.fileSize, vmOffset - segment.vmOffset <= segment.fileSize - UInt64(count) {
                return UnsafeMemory.copy(address: image.base + vmOffset, size: UInt64(count))
            }
        }
        return nil
    }

    /// Fails unless the `count` bytes at `vmOffset` from image `index`'s base lie inside one
    /// of its writable segments (where fixups may go).
    @inline(__always)
    package func checkWritable(image index: Int, vmOffset: UInt64, count: UInt64 = 8) throws(LoadError) {
        let plan = images[index].plan
        guard !plan.isWritable(offset: vmOffset, size: count) else { return }
        throw .mapping(image: plan.path, reason: "fixup at offset \(hex(vmOffset)) is outside every writable segment")
    }

    /// Reads the 64-bit word at `vmOffset` from image `index`'s base (checked writable).
    package func load(image index: Int, vmOffset: UInt64) throws(LoadError) -> UInt64 {
        try checkWritable(image: index, vmOffset: vmOffset)
        return UnsafeMemory.load64(images[index].base + vmOffset)
    }

    /// Writes the 64-bit word at `vmOffset` from image `index`'s base (checked writable).
    package func store(_ value: UInt64, image index: Int, vmOffset: UInt64) throws(LoadError) {
        try checkWritable(image: index, vmOffset: vmOffset)
        UnsafeMemory.store64(value, at: images[index].base + vmOffset)
    }

    /// The image and offset `address` points into (the image whose mapping holds it), or nil.
    package func target(of address: UInt64) -> BindTarget? {
        for (index, image) in images.enumerated() where address >= image.base && address - image.base < image.plan.vmSize {
            return .image(index, offset: address - image.base)
        }
        return nil
    }

    /// Whether `address` lies in an executable segment of image `index` (initializers, main).
    package func isExecutable(_ address: UInt64, image index: Int) -> Bool {
        let image = images[index]
        return image.plan.segments.contains { segment in
            segment.protection.contains(.execute) && address >= image.base + segment.vmOffset
                && address - (image.base + segment.vmOffset) < segment.vmSize
        }
    }

    /// What `body` returns; when it throws, this memory is released first. The one way a
    /// launch that fails after mapping gives back what it mapped: no error path releases by hand.
    package func releasedOnFailure<Value, Failure: Error>(of body: () throws(Failure) -> Value) throws(Failure) -> Value {
        do {
            return try body()
        } catch {
            release()
            throw error
        }
    }
}
