#if canImport(Glibc)
import Glibc
#endif
import CPageIn
import CUserfault
import LaunchPlan
import MachOReader
import Synchronization
import LoaderSystem

/// Page-in linking's contact with the kernel: the userfaultfd and its ioctls (`CUserfault`),
/// the process-wide SIGBUS handler and its live regions (`CPageIn`), staging pages and file
/// reads. Called by ``FixupPager`` with ranges it registered and addresses it checked.
enum UnsafeUserfault {
    /// The one page size page-in works with (the size of the staging buffer).
    static let pageSize = UInt64(DYLD3_PAGEIN_PAGE_SIZE)

    /// A userfaultfd with the API handshake done (`UFFD_FEATURE_SIGBUS`), or the call that failed.
    static func open() -> Result<Int32, LoadError> {
        var throughDevice: Int32 = 0
        let fd = unsafe dyld3_uffd_open(&throughDevice)
        guard fd >= 0 else { return .failure(.systemCall(failure(fd, "userfaultfd"))) }
        let api = dyld3_uffd_api(fd)
        guard api == 0 else {
            Glibc.close(fd)
            return .failure(.systemCall(failure(api, "UFFDIO_API (UFFD_FEATURE_SIGBUS)")))
        }
        return .success(fd)
    }

    static func register(_ fd: Int32, start: UInt64, length: UInt64) -> SystemCallFailure? {
        let result = dyld3_uffd_register(fd, start, length)
        return result == 0 ? nil : failure(result, "UFFDIO_REGISTER")
    }

    /// Installs `count` pages from `staging` at `address`: 0 or the errno (EEXIST: another
    /// thread installed a page; ENOENT, EFAULT: the range is gone), and the pages installed.
    /// From the fault path: errno is left alone.
    @inline(__always)
    static func copy(_ fd: Int32, pages address: UInt64, count: Int, from staging: StagingPage) -> (errno: Int32, installed: Int) {
        var copied: Int64 = 0
        let result = unsafe dyld3_pagein_copy(fd, address, staging.pointer, UInt64(count) * pageSize, &copied)
        return (-result, Int(copied / Int64(pageSize)))
    }

    static func close(_ fd: Int32) { _ = Glibc.close(fd) }

    /// Reads `count` bytes of `fd` at `offset` into `staging`: the bytes read (fewer at the
    /// file's end), or -errno. From the fault path: errno is left alone.
    @inline(__always)
    static func read(_ fd: Int32, offset: UInt64, count: Int, into staging: StagingPage) -> Int {
        var done = 0
        while done < count {
            let got = unsafe dyld3_pagein_pread(fd, staging.pointer + done, UInt64(count - done), offset + UInt64(done))
            guard got > 0 else { return got == 0 ? done : Int(got) }
            done += Int(got)
        }
        return done
    }

    @inline(__always)
    static func zero(_ staging: StagingPage, from: Int, to end: Int) {
        guard from < end else { return }
        unsafe (staging.pointer + from).initializeMemory(as: UInt8.self, repeating: 0, count: end - from)
    }

    /// Where pages are assembled before `UFFDIO_COPY` installs them: the SIGBUS handler's one
    /// page on the faulting thread's stack, or a ``StagingPool`` slot. Never registered.
    @safe struct StagingPage {
        let pointer: UnsafeMutableRawPointer
        var address: UInt64 { unsafe UInt64(UInt(bitPattern: pointer)) }

        /// The staging page `index` pages further on.
        @inline(__always)
        func page(_ index: Int) -> StagingPage { unsafe StagingPage(pointer: pointer + index * Int(UnsafeUserfault.pageSize)) }
    }

    /// Fault-around's staging: up to 64 slots of `pagesPerSlot` pages, each claimed by a
    /// compare-and-swap on its bit. A fault finding all taken fills its page alone: none waits.
    @safe final class StagingPool: @unchecked Sendable {
        let base: UnsafeMutableRawPointer
        let slots: Int
        let pagesPerSlot: Int
        private let taken = Atomic<UInt64>(0)

        init?(slots: Int, pagesPerSlot: Int) {
            precondition(slots >= 1 && slots <= 64 && pagesPerSlot >= 1)
            let size = slots * pagesPerSlot * Int(UnsafeUserfault.pageSize)
            guard case let .success(pointer) = unsafe UnsafeSystemCall.mapping({
                unsafe mmap(nil, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
            }) else { return nil }
            unsafe base = pointer
            self.slots = slots
            self.pagesPerSlot = pagesPerSlot
        }

        /// A free slot, claimed; nil when every slot is taken.
        @inline(__always)
        func claim() -> Int? {
            var current = taken.load(ordering: .relaxed)
            while true {
                let free = ~current & (slots == 64 ? ~0 : (1 << UInt64(slots)) - 1)
                guard free != 0 else { return nil }
                let slot = free.trailingZeroBitCount
                let (exchanged, original) = taken.compareExchange(expected: current, desired: current | (1 << UInt64(slot)),
                                                                  ordering: .acquiringAndReleasing)
                if exchanged { return slot }
                current = original
            }
        }

        @inline(__always)
        func release(_ slot: Int) { taken.bitwiseAnd(~(UInt64(1) << UInt64(slot)), ordering: .releasing) }

        @inline(__always)
        func staging(_ slot: Int) -> StagingPage {
            unsafe StagingPage(pointer: base + slot * pagesPerSlot * Int(UnsafeUserfault.pageSize))
        }

        deinit { _ = unsafe munmap(base, slots * pagesPerSlot * Int(UnsafeUserfault.pageSize)) }
    }

    /// A heap page standing in for the stack buffer outside a fault.
    static func withScratchPage<Result>(_ body: (StagingPage) -> Result) -> Result {
        let pointer = UnsafeMutableRawPointer.allocate(byteCount: Int(pageSize), alignment: 64)
        defer { unsafe pointer.deallocate() }
        return body(unsafe StagingPage(pointer: pointer))
    }

    /// Whether the first `count` bytes of `staging` hash to code slot `slot` of `hashes`
    /// (a slot ``PageHashes/slot(fileOffset:bytes:)`` gave): hashed in C on the stack.
    @inline(__always)
    static func verify(_ staging: StagingPage, count: Int, against hashes: PageHashes, slot: Int) -> Bool {
        unsafe hashes.slots.withUnsafeBytes { slots in
            unsafe dyld3_pagein_hash_matches(hashes.hashType, staging.pointer, UInt64(min(count, Int(pageSize))),
                                             slots.baseAddress.unsafelyUnwrapped + slot * hashes.hashSize, UInt64(hashes.hashSize)) != 0
        }
    }

    /// The first page that could not be filled, as the fault path records it: claimed by one
    /// compare-and-swap, written once into memory allocated with the context, then published.
    /// Never a lock, never an allocation; a later failure is dropped.
    @safe final class FirstFailure: @unchecked Sendable {
        /// 0: none; 1: being written; 2: written.
        private let state = Atomic<Int>(0)
        private let storage: UnsafeMutablePointer<PageFillFailure>

        init() { unsafe storage = .allocate(capacity: 1) }

        @inline(__always)
        func record(_ failure: PageFillFailure) {
            guard state.compareExchange(expected: 0, desired: 1, ordering: .relaxed).exchanged else { return }
            unsafe storage.initialize(to: failure)
            state.store(2, ordering: .releasing)
        }

        var value: PageFillFailure? { state.load(ordering: .acquiring) == 2 ? unsafe storage.pointee : nil }

        deinit {
            if state.load(ordering: .acquiring) == 2 { unsafe storage.deinitialize(count: 1) }
            unsafe storage.deallocate()
        }
    }

    // MARK: The SIGBUS handler and its registry of live regions

    /// Installs the process-wide SIGBUS handler (once; later calls do nothing).
    static func installHandler() -> SystemCallFailure? {
        let result = dyld3_pagein_install()
        return result == 0 ? nil : failure(result, "sigaction(SIGBUS)")
    }

    /// Makes `[start, end)` live (a SIGBUS there calls `context.fill`): its slot, or nil when
    /// all ``regionCapacity`` are taken. The registry holds `context` unretained: the caller
    /// keeps it alive until ``deactivate(_:)`` says no fill runs, and the fill borrows it
    /// without a retain or a release.
    static func activate(start: UInt64, end: UInt64, context: FaultContext) -> Int32? {
        let slot = unsafe dyld3_pagein_activate(start, end, Unmanaged.passUnretained(context).toOpaque(), fill)
        return slot >= 0 ? slot : nil
    }

    /// The fill the SIGBUS handler calls: `owner` is the region's ``FaultContext``.
    static let fill: dyld3_pagein_fill = { owner, address, staging in
        unsafe Unmanaged<FaultContext>.fromOpaque(owner.unsafelyUnwrapped)._withUnsafeGuaranteedRef { context in
            switch unsafe context.fill(address, staging: StagingPage(pointer: staging.unsafelyUnwrapped)) {
            case .notRegistered: Int32(DYLD3_PAGEIN_NOT_MINE)
            case .retry: Int32(DYLD3_PAGEIN_RETRY)
            case .failed: Int32(DYLD3_PAGEIN_FAILED)
            }
        }
    }

    /// Calls ``fill`` itself, on this thread and before the region goes live, for a fault at
    /// `address`, one outside the region (nothing is filled): the types the handler's own path
    /// uses have their metadata made here, so none is first made inside the handler, where the
    /// Swift runtime's metadata lock may be held by the very thread the fault interrupted.
    static func warm(_ context: FaultContext, address: UInt64) {
        withScratchPage { staging in
            _ = unsafe fill(Unmanaged.passUnretained(context).toOpaque(), address, staging.pointer)
        }
    }

    /// Ends a region and waits up to a second for running fills: false when one still runs.
    static func deactivate(_ slot: Int32) -> Bool { dyld3_pagein_deactivate(slot, 1_000_000_000) != 0 }

    /// Keeps `object` alive for good (what a fill that never returned may still read).
    static func keepForever(_ object: AnyObject) { _ = unsafe Unmanaged.passRetained(object) }

    static let regionCapacity = Int(DYLD3_PAGEIN_REGIONS)

    /// Writes `dyld3: page-in: PATH: cannot fill page +0xVMOFFSET: REASON\n` to standard error,
    /// without allocating (`path`: its UTF-8 bytes).
    static func report(path: [UInt8], vmOffset: UInt64, reason: StaticString) {
        unsafe path.withUnsafeBufferPointer { path in
            unsafe dyld3_pagein_report_failure(path.baseAddress, UInt64(path.count), vmOffset, reason.utf8Start, UInt64(reason.utf8CodeUnitCount))
        }
    }

    /// The failure of a shim call that returned `-errno`.
    private static func failure(_ negativeErrno: Int32, _ call: String) -> SystemCallFailure {
        SystemCallFailure(call, UnsafeSystemCall.errno(returned: negativeErrno), namesCall: true)
    }
}
