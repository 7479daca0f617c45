#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import SystemPackage
import LaunchPlan

/// Applies one page's fixups to that page's bytes (the closure's page index, in the fast
/// path). Called on the handler thread, once per first touch of a page: it must not
/// allocate, build strings or look anything up by name, and must never touch the launch's
/// registered memory (the handler would wait on itself).
public protocol PageFixupSource: AnyObject, Sendable {
    /// Writes the fixups of image `image` that lie on `page` into it; nil on success.
    func applyFixups(image: Int, to page: inout PageBuffer) -> PageFillFailure?
}

/// The bytes of one page being filled, before they are installed: the file's bytes (zeros
/// past the file), which ``PageFixupSource/applyFixups(image:to:)`` fixes up in place.
public struct PageBuffer {
    let staging: UnsafeUserfault.StagingPage
    /// The page's offset from its image's base.
    public let vmOffset: UInt64
    /// Where the image's base is mapped.
    public let imageBase: UInt64
    public var size: UInt64 { staging.size }

    /// Whether `run` (offsets from the image's base) lies wholly on this page: the one
    /// check per run before its stores.
    @inline(__always)
    public func contains(_ run: FixupRun) -> Bool {
        run.start >= vmOffset && run.last >= run.start && run.last - vmOffset <= staging.size - 8
    }

    /// Stores a word at `imageOffset` (an offset from the image's base) when its 8 bytes lie
    /// on this page; a location off the page is a fault, not a store.
    @inline(__always)
    public func store(_ value: UInt64, atImageOffset imageOffset: UInt64) throws(FixupFault) {
        let inPage = imageOffset &- vmOffset
        guard imageOffset >= vmOffset, inPage <= staging.size - 8 else { throw .runOffPage(start: imageOffset) }
        UnsafeMemory.store64(value, at: staging.address &+ inPage)
    }
}

/// Why the handler could not fill a page. Built on the handler thread without allocation;
/// worded by ``description`` when the launch reads it.
public enum PageFillFailure: Error, Equatable, Sendable, CustomStringConvertible {
    /// The kernel reported a fault at an address no registered range holds.
    case outsideRanges(address: UInt64)
    /// Reading the page's file bytes failed (errno), or the file is shorter than planned.
    case fileRead(image: Int, vmOffset: UInt64, errno: Int32)
    case fileShort(image: Int, vmOffset: UInt64, got: Int, expected: Int)
    /// The page's fixups: a run off the page, a target outside the image or the table, or
    /// runs that do not decode (the same fault an eager launch reports).
    case fixups(image: Int, vmOffset: UInt64, FixupFault)
    /// `UFFDIO_COPY` failed (errno).
    case install(address: UInt64, errno: Int32)
    /// Reading the userfaultfd or waiting on it failed: the handler stopped.
    case handlerStopped

    public var description: String {
        func page(_ image: Int, _ offset: UInt64) -> String { "image \(image) page +0x\(String(offset, radix: 16))" }
        switch self {
        case let .outsideRanges(address): return "fault at 0x\(String(address, radix: 16)) is outside every registered range"
        case let .fileRead(image, offset, errno): return "\(page(image, offset)): reading its file bytes failed: \(Errno(rawValue: errno))"
        case let .fileShort(image, offset, got, expected):
            return "\(page(image, offset)): the file holds \(got) of its \(expected) bytes (it shrank since launch)"
        case let .fixups(image, offset, fault): return "\(page(image, offset)): \(fault)"
        case let .install(address, errno): return "UFFDIO_COPY at 0x\(String(address, radix: 16)) failed: \(Errno(rawValue: errno))"
        case .handlerStopped: return "reading or polling the userfaultfd failed: the handler stopped"
        }
    }
}

/// Page-in linking's fault handler (docs/page-in.md): a userfaultfd on which the launch
/// registers the segments that receive fixups (reserved without contents), and a thread
/// that fills each page on its first touch with the file's bytes and that page's fixups,
/// installed atomically with `UFFDIO_COPY`. A page it cannot fill is made inaccessible and
/// its waiters woken, so no thread waits forever; the first such failure is kept
/// (``failure``). Stopped, and its descriptors closed, when the launch memory is released.
public final class FixupPager: @unchecked Sendable {
    /// One registered segment: where it is mapped and where its file bytes are.
    struct Range {
        let start: UInt64
        let end: UInt64
        let image: Int
        let imageBase: UInt64
        /// The segment's offset from its image's base.
        let vmOffset: UInt64
        let fileOffset: UInt64
        let fileSize: UInt64
        let fd: Int32
    }

    /// The handler thread's name, as `/proc/self/task/*/comm` shows it.
    public static var threadName: String { UnsafeUserfault.threadName }

    /// Whether kernel-mode faults (a system call touching an untouched page) reach the
    /// handler: false under `UFFD_USER_MODE_ONLY`, where they fail with EFAULT.
    public let resolvesKernelFaults: Bool
    private let fd: Int32
    private let stop: Int32
    private let staging: UnsafeUserfault.StagingPage
    private let batch = UnsafeUserfault.FaultBatch.allocate()
    private let pageSize = UnsafeMemory.pageSize
    // Written only before start() (ranges and the descriptors behind them), read by the handler.
    private var ranges: [Range] = []
    private var imageDescriptors: [Int: Int32] = [:]
    private var source: PageFixupSource?
    private var thread: pthread_t?
    private var closed = false
    private let firstFailure = Mutex<PageFillFailure?>(nil)
    private let filled = Atomic<Int>(0)
    private let running = Atomic<Bool>(false)

    /// A pager on a new userfaultfd: without `UFFD_USER_MODE_ONLY` when the kernel allows it
    /// (root, or `vm.unprivileged_userfaultfd` = 1), with it otherwise, or only with it when
    /// `userModeOnly`. Fails with the reason when userfaultfd is not available.
    public static func open(userModeOnly: Bool = false) -> Result<FixupPager, SystemCallFailure> {
        var attempt = UnsafeUserfault.open(userModeOnly: userModeOnly)
        var kernelFaults = !userModeOnly
        if case .failure = attempt, !userModeOnly {
            attempt = UnsafeUserfault.open(userModeOnly: true)
            kernelFaults = false
        }
        let fd: Int32
        switch attempt {
        case let .success(opened): fd = opened
        case let .failure(reason): return .failure(reason)
        }
        let stop: Int32
        switch UnsafeUserfault.stopEvent() {
        case let .success(event): stop = event
        case let .failure(reason):
            UnsafeUserfault.close(fd)
            return .failure(reason)
        }
        switch UnsafeUserfault.StagingPage.allocate(size: UnsafeMemory.pageSize) {
        case let .success(staging): return .success(FixupPager(fd: fd, stop: stop, staging: staging, resolvesKernelFaults: kernelFaults))
        case let .failure(reason):
            UnsafeUserfault.close(fd)
            UnsafeUserfault.close(stop)
            return .failure(reason)
        }
    }

    private init(fd: Int32, stop: Int32, staging: UnsafeUserfault.StagingPage, resolvesKernelFaults: Bool) {
        self.fd = fd
        self.stop = stop
        self.staging = staging
        self.resolvesKernelFaults = resolvesKernelFaults
    }

    /// The first page the handler could not fill, if any.
    public var failure: PageFillFailure? { firstFailure.withLock { $0 } }
    /// Pages filled so far.
    public var pagesFilled: Int { filled.load(ordering: .sequentiallyConsistent) }
    /// Bytes registered (every page of every registered segment).
    public var registeredBytes: UInt64 { ranges.reduce(0) { $0 + ($1.end - $1.start) } }

    /// Registers a segment mapped without contents at `start` (page-aligned, `size` rounded
    /// to pages), whose file bytes are `fileSize` bytes at `fileOffset` of `descriptor`
    /// (duplicated once per image and kept until ``close()``). Before ``start(source:)`` only.
    func register(start: UInt64, size: UInt64, image: Int, imageBase: UInt64, vmOffset: UInt64,
                  fileOffset: UInt64, fileSize: UInt64, descriptor: Int32) throws(LoadError) -> Void {
        let imageFD: Int32
        if let known = imageDescriptors[image] {
            imageFD = known
        } else {
            switch UnsafeUserfault.duplicate(descriptor) {
            case let .success(copy): imageFD = copy
            case let .failure(reason): throw .mapping(image: "image \(image)", reason: "dup: \(reason)")
            }
            imageDescriptors[image] = imageFD
        }
        if let reason = UnsafeUserfault.register(fd, start: start, length: size) {
            throw .mapping(image: "image \(image)", reason: "\(reason)")
        }
        ranges.append(Range(start: start, end: start + size, image: image, imageBase: imageBase, vmOffset: vmOffset,
                            fileOffset: fileOffset, fileSize: fileSize, fd: imageFD))
    }

    /// Starts the handler thread; from here on a touch of a registered page is resolved.
    public func start(source: PageFixupSource) throws(LoadError) {
        ranges.sort { $0.start < $1.start }
        self.source = source
        switch UnsafeUserfault.startThread({ [self] in
            running.store(true, ordering: .sequentiallyConsistent)
            handlerLoop()
        }) {
        case let .success(started): thread = started
        case let .failure(reason): throw .mapping(image: "page-in handler", reason: "pthread_create: \(reason)")
        }
        // Returns once the thread runs (named, polling): a launch's first fault finds it there.
        while !running.load(ordering: .sequentiallyConsistent) { UnsafeUserfault.yield() }
    }

    /// Stops the handler (after the memory is unmapped: a thread still waiting on a page is
    /// woken and faults on the unmapped address) and closes every descriptor. Safe twice.
    public func close() {
        guard !closed else { return }
        closed = true
        if let thread {
            UnsafeUserfault.signalStop(stop)
            UnsafeUserfault.join(thread)
        }
        UnsafeUserfault.close(fd)
        UnsafeUserfault.close(stop)
        for descriptor in imageDescriptors.values { UnsafeUserfault.close(descriptor) }
        staging.free()
        batch.free()
        source = nil
    }

    private func handlerLoop() {
        while true {
            switch UnsafeUserfault.wait(fd, stop: stop) {
            case .failure:
                record(.handlerStopped)
                return
            case let .success(ready):
                if ready.fault { drain() }
                if ready.stop { return }
            }
        }
    }

    /// Fills every pending fault: one read(2) takes all pending messages (up to a batch);
    /// a batch that was not full means nothing else was pending, so the handler goes back
    /// to waiting without a read that would only say EAGAIN.
    private func drain() {
        while true {
            switch UnsafeUserfault.readFaults(fd, into: batch) {
            case let .success((count, full)):
                for index in 0..<count { fill(batch[index]) }
                if !full { return }
            case .failure:
                record(.handlerStopped)
                return
            }
        }
    }

    /// The range holding `address` (binary search), or nil.
    @inline(__always)
    private func range(holding address: UInt64) -> Range? {
        var low = 0, high = ranges.count
        while low < high {
            let middle = (low + high) / 2
            if ranges[middle].end <= address { low = middle + 1 } else { high = middle }
        }
        return low < ranges.count && ranges[low].start <= address ? ranges[low] : nil
    }

    /// Fills the page holding `address`: file bytes, zeros past them, the page's fixups,
    /// then `UFFDIO_COPY`. No allocation on success.
    private func fill(_ address: UInt64) {
        let page = address & ~(pageSize - 1)
        guard let range = range(holding: page), let source else {
            fail(.outsideRanges(address: address), page: page)
            return
        }
        let inSegment = page - range.start
        let vmOffset = range.vmOffset + inSegment
        var fileBytes = 0
        if inSegment < range.fileSize {
            let expected = Int(min(pageSize, range.fileSize - inSegment))
            let got = UnsafeUserfault.read(range.fd, offset: range.fileOffset + inSegment, count: expected, into: staging)
            guard got >= 0 else { return fail(.fileRead(image: range.image, vmOffset: vmOffset, errno: Int32(-got)), page: page) }
            guard got == expected else {
                return fail(.fileShort(image: range.image, vmOffset: vmOffset, got: got, expected: expected), page: page)
            }
            fileBytes = got
        }
        UnsafeUserfault.zero(staging, from: fileBytes)
        var buffer = PageBuffer(staging: staging, vmOffset: vmOffset, imageBase: range.imageBase)
        if let failure = source.applyFixups(image: range.image, to: &buffer) { return fail(failure, page: page) }
        // Counted before the copy wakes the faulting thread, so a thread that has touched a
        // page sees it counted.
        filled.add(1, ordering: .sequentiallyConsistent)
        let error = UnsafeUserfault.copy(fd, page: page, from: staging)
        guard error != 0 else { return }
        filled.subtract(1, ordering: .sequentiallyConsistent)
        if error == EEXIST {
            // Several threads faulted on the page before it was filled: one message each. The
            // first filled it; this one only woke its waiters, and is not counted again.
            return
        } else if error == ENOENT || error == EFAULT {
            // The range was unmapped (the launch released while a thread waited): let it fault again.
            UnsafeUserfault.wake(fd, page: page, size: pageSize)
        } else {
            fail(.install(address: page, errno: error), page: page)
        }
    }

    private func fail(_ failure: PageFillFailure, page: UInt64) {
        record(failure)
        UnsafeUserfault.poison(fd, page: page, size: pageSize)
    }

    private func record(_ failure: PageFillFailure) {
        firstFailure.withLock { if $0 == nil { $0 = failure } }
    }
}
