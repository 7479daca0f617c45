#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import SystemPackage
import LaunchPlan
import MachOReader
import LoaderSystem

/// Applies one page's fixups to that page's bytes. Called inside the SIGBUS handler of the
/// thread that first touched the page (any thread, interrupted anywhere, many at once): it
/// must not allocate, take a lock, touch a thread-local (errno included), build strings or
/// look anything up by name, must read only what was set before the pager started (no
/// `var` of a class: exclusivity checking keeps its accesses in a thread-local), and must
/// never touch the launch's registered memory.
package protocol PageFixupSource: AnyObject, Sendable {
    /// Writes the fixups of image `image` that lie on `page` into it; nil on success.
    func applyFixups(image: Int, to page: inout PageBuffer) -> PageFillFailure?
}

/// One page being filled, before it is installed: the file's bytes (zeros past the file),
/// fixed up in place by ``PageFixupSource/applyFixups(image:to:)``.
package struct PageBuffer {
    let staging: UnsafeUserfault.StagingPage
    /// The page's offset from its image's base.
    package let vmOffset: UInt64
    /// Where the image's base is mapped.
    package let imageBase: UInt64
    package var size: UInt64 { UnsafeUserfault.pageSize }

    /// Whether `run` lies wholly on this page: the one check per run before its stores.
    @inline(__always)
    package func contains(_ run: FixupRun) -> Bool {
        run.start >= vmOffset && run.last >= run.start && run.last - vmOffset <= size - 8
    }

    /// Stores a word at `imageOffset` from the image's base; a location off the page is a fault.
    @inline(__always)
    package func store(_ value: UInt64, atImageOffset imageOffset: UInt64) throws(FixupFault) {
        let inPage = imageOffset &- vmOffset
        guard imageOffset >= vmOffset, inPage <= size - 8 else { throw .runOffPage(start: imageOffset) }
        UnsafeMemory.store64(value, at: staging.address &+ inPage)
    }
}

/// Why a page could not be filled: a kind, not an error (the fault path reports it in one
/// line and ends the process), built without allocation; worded when the launch reads it.
package enum PageFillFailure: Equatable, Sendable, CustomStringConvertible {
    /// Reading the page's file bytes failed (errno), or the file is shorter than planned.
    case fileRead(image: Int, vmOffset: UInt64, errno: Int32)
    case fileShort(image: Int, vmOffset: UInt64, got: Int, expected: Int)
    /// The page's fixups do not apply (the same fault an eager launch reports).
    case fixups(image: Int, vmOffset: UInt64, FixupFault)
    case install(address: UInt64, errno: Int32)
    case signature(image: Int, vmOffset: UInt64, slot: Int)

    package var description: String {
        func page(_ image: Int, _ offset: UInt64) -> String { "image \(image) page +\(hex(offset))" }
        switch self {
        case let .fileRead(image, offset, errno): return "\(page(image, offset)): reading its file bytes failed: \(Errno(rawValue: errno))"
        case let .fileShort(image, offset, got, expected):
            return "\(page(image, offset)): the file holds \(got) of its \(expected) bytes (it shrank since launch)"
        case let .fixups(image, offset, fault): return "\(page(image, offset)): \(fault)"
        case let .install(address, errno): return "UFFDIO_COPY at \(hex(address)) failed: \(Errno(rawValue: errno))"
        case let .signature(image, offset, slot):
            return "\(page(image, offset)): does not match its code signature's hash for page \(slot)"
        }
    }

    /// The fault path's line before the process ends: a fixed text per kind, no allocation.
    var reason: StaticString {
        switch self {
        case .fileRead: return "reading its file bytes failed"
        case .fileShort: return "its image file is shorter than when the launch began (it was truncated)"
        case .fixups: return "its fixups do not apply (a run off the page, or a target outside its image or the table)"
        case .install: return "UFFDIO_COPY failed"
        case .signature: return "its bytes do not match its code signature's page hash"
        }
    }
}

/// Page-in linking (docs/page-in.md): the pages that receive fixups are reserved empty and
/// registered with a userfaultfd opened with `UFFD_FEATURE_SIGBUS`, so a first touch raises
/// SIGBUS on the touching thread, which fills the page itself in the handler (file bytes and
/// fixups, assembled on its stack, installed with `UFFDIO_COPY`) and retries: no thread ever
/// waits for another. A page that cannot be filled is reported in one line and the process
/// ends by SIGBUS, as a plain launch does when a mapped file cannot be read. A system call
/// touching an untouched page fails with EFAULT.
///
/// Set up on one thread (`register`), then ``start(source:faultAround:)`` builds the fault
/// path's ``FaultContext``, immutable, and only then makes the region live: the fill reads
/// nothing else.
package final class FixupPager: @unchecked Sendable {
    /// One registered range: where it is mapped and where its file bytes are.
    struct Range {
        let start: UInt64
        let end: UInt64
        let image: Int
        let imageBase: UInt64
        /// The range's offset from its image's base; where its file bytes are, and how many.
        let vmOffset: UInt64
        let fileOffset: UInt64
        let fileSize: UInt64
        let fd: Int32
    }

    private let fd: Int32
    /// Per image: its code signature as recorded (nil: unsigned), which every page filled is checked against.
    private let expectedSignatures: [SignedImage?]
    // Written only before start(), on the thread setting up; the fault path reads the
    // FaultContext made from them.
    private var ranges: [Range] = []
    /// The descriptors the images were mapped from, kept open until ``close()``.
    private var imageDescriptors: [Int: ImageDescriptor] = [:]
    private var imagePaths: [Int: String] = [:]
    /// Per image: its CodeDirectory read back at its first range.
    private var pageSignatures: [Int: PageSignature] = [:]
    private var context: FaultContext?
    private var slot: Int32?
    private var closed = false

    /// A pager on a new userfaultfd that checks every page it fills of image N against
    /// `signatures[N]` (nil or absent: unsigned); fails with the reason when userfaultfd is
    /// unavailable or the host's pages are not the 4 KiB page-in fills.
    package static func open(signatures: [SignedImage?] = []) -> Result<FixupPager, LoadError> {
        guard UnsafeMemory.pageSize == UnsafeUserfault.pageSize else {
            return .failure(.systemCall(SystemCallFailure("page size", refused: "page-in needs \(UnsafeUserfault.pageSize)-byte pages; this host's are \(UnsafeMemory.pageSize)")))
        }
        return UnsafeUserfault.open().map { FixupPager(fd: $0, signatures: signatures) }
    }

    private init(fd: Int32, signatures: [SignedImage?]) {
        self.fd = fd
        expectedSignatures = signatures
    }

    /// The first page that could not be filled (the process is ending by then, unless from ``fill(_:)``).
    package var failure: PageFillFailure? { context?.firstFailure.value }
    package var pagesFilled: Int { context?.filled.load(ordering: .sequentiallyConsistent) ?? 0 }
    /// Faults resolved so far (one fills its page and, with fault-around, its neighbours).
    package var faults: Int { context?.faults.load(ordering: .sequentiallyConsistent) ?? 0 }
    package var registeredBytes: UInt64 { ranges.reduce(0) { $0 + ($1.end - $1.start) } }

    /// Registers the launch's whole reservation at once: a range made accessible with
    /// `mprotect` stays registered, one mapped over does not. Before ``start(source:faultAround:)``.
    package func registerRegion(start: UInt64, size: UInt64) throws(LoadError) {
        if let reason = UnsafeUserfault.register(fd, start: start, length: size) {
            throw .mapping(image: "page-in", reason: "\(reason)")
        }
    }

    /// Registers a range mapped without contents at `start` (page-aligned), `vmOffset` from its
    /// image's base, whose file bytes are `fileSize` bytes at `fileOffset` of `descriptor`
    /// (kept open until ``close()``); `inRegion`: already registered with the reservation.
    package func register(start: UInt64, size: UInt64, image: Int, path: String, imageBase: UInt64, vmOffset: UInt64,
                  fileOffset: UInt64, fileSize: UInt64, descriptor: ImageDescriptor, sliceOffset: UInt64 = 0,
                  inRegion: Bool = false) throws(LoadError) {
        if imageDescriptors[image] == nil {
            imageDescriptors[image] = descriptor
            imagePaths[image] = path
            if image < expectedSignatures.count, let signature = expectedSignatures[image] {
                pageSignatures[image] = try PageSignature(signature, of: descriptor, sliceOffset: sliceOffset, path: path)
            }
        }
        if let signature = pageSignatures[image] {
            try signature.verifyUncheckable(range: start..<(start + size), vmOffset: vmOffset, fileOffset: fileOffset, fileSize: fileSize,
                                            of: descriptor, image: image, path: path)
        }
        if !inRegion, let reason = UnsafeUserfault.register(fd, start: start, length: size) {
            throw .mapping(image: path, reason: "\(reason)")
        }
        ranges.append(Range(start: start, end: start + size, image: image, imageBase: imageBase, vmOffset: vmOffset,
                            fileOffset: fileOffset, fileSize: fileSize, fd: descriptor.fd))
    }

    /// The pages one fault fills by default (docs/page-in.md, "Fault-around": chosen by measurement).
    package static let defaultFaultAround = 4

    /// Makes the registered ranges live, each fault filling up to `faultAround` pages. The fill
    /// path runs once first (fixups on a scratch page, the handler's call for an address past
    /// the region), so nothing it needs is first set up in a handler.
    package func start(source: PageFixupSource, faultAround: Int = FixupPager.defaultFaultAround) throws(LoadError) {
        ranges.sort { $0.start < $1.start }
        let pool = faultAround > 1 ? UnsafeUserfault.StagingPool(slots: 8, pagesPerSlot: min(faultAround, 256)) : nil
        let images = (0..<(ranges.map(\.image).max().map { $0 + 1 } ?? 0)).map {
            FaultContext.Image(path: Array((imagePaths[$0] ?? "").utf8), hashes: pageSignatures[$0].map { FaultContext.Hashes($0.hashes) })
        }
        let context = FaultContext(fd: fd, ranges: ranges, source: source, images: images, pool: pool)
        self.context = context
        if let first = ranges.first {
            UnsafeUserfault.withScratchPage { scratch in
                var buffer = PageBuffer(staging: scratch, vmOffset: first.vmOffset, imageBase: first.imageBase)
                _ = source.applyFixups(image: first.image, to: &buffer)
            }
        }
        if let reason = UnsafeUserfault.installHandler() { throw .mapping(image: "page-in", reason: "\(reason)") }
        guard let start = ranges.first?.start, let end = ranges.last?.end else { return }
        UnsafeUserfault.warm(context, address: end)
        guard let slot = UnsafeUserfault.activate(start: start, end: end, context: context) else {
            throw .mapping(image: "page-in", reason: "\(UnsafeUserfault.regionCapacity) launches with page-in memory are live in this process")
        }
        self.slot = slot
    }

    /// Fills the page holding `address` as a first touch would: whether it is there (else see ``failure``).
    package func fill(_ address: UInt64) -> Bool {
        guard let context else { return false }
        return UnsafeUserfault.withScratchPage { context.fill(address, staging: $0, reporting: false) } == .retry
    }

    /// What `body` returns (the memory the pager is given to); when it throws, the pager is
    /// closed, as no memory owns it yet.
    package func closedOnFailure<Value>(_ body: () throws -> Value) throws -> Value {
        do {
            return try body()
        } catch {
            close()
            throw error
        }
    }

    /// Ends the region (waiting up to a second for a fill in progress; one that never returns
    /// keeps the pager alive for good) and closes every descriptor. After the memory is
    /// unmapped. Safe twice.
    package func close() {
        guard !closed else { return }
        closed = true
        if let slot, !UnsafeUserfault.deactivate(slot) {
            // A fill still runs (its thread stopped inside it): it may yet read the context
            // and the descriptors, so none is freed or closed, and no number is reused.
            UnsafeUserfault.keepForever(self)
            return
        }
        UnsafeUserfault.close(fd)
        imageDescriptors = [:]
    }
}

/// What the fault path reads, all of it set before the region goes live and never changed
/// after (`let`s of plain values, arrays and immutable objects): nothing it reads is guarded
/// by exclusivity checking, nothing is built on first use. Only the counters and the first
/// failure change, atomically.
final class FaultContext: @unchecked Sendable {
    /// One image as the fill reports and checks it.
    struct Image {
        /// Its path's UTF-8 bytes, for the line a failed fill writes.
        let path: [UInt8]
        /// The page hashes its filled pages are checked against (nil: unsigned). Boxed: an
        /// optional of a class is one pointer, so the fill never asks the Swift runtime for an
        /// `Optional<PageHashes>`'s metadata, whose first request takes the runtime's lock
        /// (not async-signal-safe: a fault taken while another thread holds it deadlocked).
        let hashes: Hashes?
    }

    /// A signed image's ``PageHashes``, by reference.
    final class Hashes: Sendable {
        let value: PageHashes
        init(_ value: PageHashes) { self.value = value }
    }

    /// What a fill did with a fault (the SIGBUS handler's `DYLD3_PAGEIN_*`).
    enum Outcome {
        /// The address is not registered: the previous handler decides.
        case notRegistered
        /// The page is there, or its range is gone: retry the touch.
        case retry
        /// The page cannot be filled (recorded and, when reporting, reported): the process ends.
        case failed
    }

    let fd: Int32
    let ranges: [FixupPager.Range]
    let source: PageFixupSource
    /// Per image number (the ranges' `image`).
    let images: [Image]
    let pageSize = UnsafeUserfault.pageSize
    /// Fault-around's staging slots (nil: every fault fills its own page alone).
    let pool: UnsafeUserfault.StagingPool?
    let filled = Atomic<Int>(0)
    let faults = Atomic<Int>(0)
    let firstFailure = UnsafeUserfault.FirstFailure()

    init(fd: Int32, ranges: [FixupPager.Range], source: PageFixupSource, images: [Image], pool: UnsafeUserfault.StagingPool?) {
        (self.fd, self.ranges, self.source, self.images, self.pool) = (fd, ranges, source, images, pool)
    }

    @inline(__always)
    private func rangeIndex(holding address: UInt64) -> Int? {
        let low = ranges.partitionPoint { $0.end <= address }
        return low < ranges.count && ranges[low].start <= address ? low : nil
    }

    /// Fills the page holding `address` and, with fault-around, the image's registered pages
    /// after it (then before it), up to a pool slot's: each range's piece read with one
    /// `pread`, installed with one `UFFDIO_COPY`; in `staging` (the stack) when no slot is free.
    /// Retry when the page is there or its range is gone; failed when it cannot be filled
    /// (recorded and, with `reporting`, reported). A neighbour that fails is left for its own
    /// touch. No allocation, no lock, no thread-local.
    func fill(_ address: UInt64, staging stack: UnsafeUserfault.StagingPage, reporting: Bool = true) -> Outcome {
        let page = address & ~(pageSize - 1)
        guard let first = rangeIndex(holding: page) else { return .notRegistered }
        var budget = 1
        var staging = stack
        var slot: Int?
        if let pool, let claimed = pool.claim() {
            slot = claimed
            staging = pool.staging(claimed)
            budget = pool.pagesPerSlot
        }
        defer { if let slot { pool?.release(slot) } }
        switch fillPiece(first, from: page, pages: budget, staging: staging) {
        case let .failed(failure): return fail(failure, reporting)
        case .gone: return .retry
        case let .filled(pages): budget -= pages; staging = staging.page(pages)
        }
        faults.add(1, ordering: .relaxed)
        // Fault-around: the image's later ranges, then its earlier ones, then the pages
        // before the faulting one in its own range.
        let image = ranges[first].image
        var next = first + 1
        while budget > 0, next < ranges.count, ranges[next].image == image {
            guard case let .filled(pages) = fillPiece(next, from: ranges[next].start, pages: budget, staging: staging) else { return .retry }
            budget -= pages
            staging = staging.page(pages)
            next += 1
        }
        var previous = first
        while budget > 0, previous > 0, ranges[previous - 1].image == image { previous -= 1 }
        while budget > 0, previous <= first {
            let end = previous == first ? page : ranges[previous].end
            let pages = min(budget, Int((end - ranges[previous].start) / pageSize))
            if pages > 0 {
                guard case let .filled(done) = fillPiece(previous, from: end - UInt64(pages) * pageSize, pages: pages, staging: staging) else { return .retry }
                budget -= done
                staging = staging.page(done)
            }
            previous += 1
        }
        return .retry
    }

    enum Piece {
        /// Pages of staging used (installed now, or found installed).
        case filled(Int)
        /// The first page cannot be filled.
        case failed(PageFillFailure)
        /// The range was released meanwhile.
        case gone
    }

    @inline(__always)
    private func fillPiece(_ index: Int, from page: UInt64, pages: Int, staging: UnsafeUserfault.StagingPage) -> Piece {
        let range = ranges[index]
        var count = min(pages, Int((range.end - page) / pageSize))
        let inRange = page - range.start
        let vmOffset = range.vmOffset + inRange
        var fileBytes = 0
        if inRange < range.fileSize {
            let available = range.fileSize - inRange
            let expected = Int(min(UInt64(count) * pageSize, available))
            let got = UnsafeUserfault.read(range.fd, offset: range.fileOffset + inRange, count: expected, into: staging)
            guard got >= 0 else { return .failed(.fileRead(image: range.image, vmOffset: vmOffset, errno: Int32(-got))) }
            if got < expected {
                // Only whole pages read are filled; the first page's bytes must all be there.
                guard got >= Int(min(pageSize, available)) else {
                    return .failed(.fileShort(image: range.image, vmOffset: vmOffset, got: got, expected: Int(min(pageSize, available))))
                }
                count = max(1, got / Int(pageSize))
            }
            fileBytes = min(got, count * Int(pageSize))
        }
        UnsafeUserfault.zero(staging, from: fileBytes, to: count * Int(pageSize))
        if range.image < images.count, let box = images[range.image].hashes {
            let hashes = box.value
            for offset in 0..<count where offset * Int(pageSize) < fileBytes {
                let fileOffset = range.fileOffset + inRange + UInt64(offset) * pageSize
                if let slot = hashes.failingSlot(staging.page(offset), fileOffset: fileOffset, bytes: min(Int(pageSize), fileBytes - offset * Int(pageSize))) {
                    guard offset > 0 else { return .failed(.signature(image: range.image, vmOffset: vmOffset, slot: slot)) }
                    count = offset
                    break
                }
            }
        }
        for offset in 0..<count {
            var buffer = PageBuffer(staging: staging.page(offset), vmOffset: vmOffset + UInt64(offset) * pageSize, imageBase: range.imageBase)
            if let failure = source.applyFixups(image: range.image, to: &buffer) {
                guard offset > 0 else { return .failed(failure) }
                count = offset
                break
            }
        }
        let (error, installed) = UnsafeUserfault.copy(fd, pages: page, count: count, from: staging)
        filled.add(installed, ordering: .sequentiallyConsistent)
        switch error {
        case 0: return .filled(count)
        case ENOENT, EFAULT: return .gone
        case EEXIST:
            // Another thread installed page `installed` first; install the rest one by one.
            for next in (installed + 1)..<max(installed + 1, count) {
                let single = UnsafeUserfault.copy(fd, pages: page + UInt64(next) * pageSize, count: 1, from: staging.page(next))
                filled.add(single.installed, ordering: .sequentiallyConsistent)
            }
            return .filled(count)
        case let error:
            return installed > 0 ? .filled(installed) : .failed(.install(address: page, errno: error))
        }
    }

    private func fail(_ failure: PageFillFailure, _ reporting: Bool) -> Outcome {
        firstFailure.record(failure)
        if reporting {
            let (image, vmOffset) = failure.page
            UnsafeUserfault.report(path: image >= 0 && image < images.count ? images[image].path : [], vmOffset: vmOffset, reason: failure.reason)
        }
        return .failed
    }
}

extension PageFillFailure {
    /// The page's image and offset (for `install`, no image and the address).
    var page: (image: Int, vmOffset: UInt64) {
        switch self {
        case let .fileRead(image, offset, _), let .fileShort(image, offset, _, _), let .fixups(image, offset, _),
             let .signature(image, offset, _):
            return (image, offset)
        case let .install(address, _): return (-1, address)
        }
    }
}

/// A page bounds the walk of its runs (``FixupRunWalk``): a run must lie wholly on it.
extension PageBuffer: FixupRunBounds {
    @inline(__always)
    package func accept(_ run: FixupRun) -> FixupRun? { contains(run) ? run : nil }

    package func fault(_ run: FixupRun) -> FixupFault { .runOffPage(start: run.start) }
}
