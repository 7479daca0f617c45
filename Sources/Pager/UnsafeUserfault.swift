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
    @inline(__always)
    static func copy(_ fd: Int32, pages address: UInt64, count: Int, from staging: StagingPage) -> (errno: Int32, installed: Int) {
        var copied: Int64 = 0
        let result = unsafe dyld3_uffd_copy(fd, address, staging.pointer, UInt64(count) * pageSize, &copied)
        return (-result, Int(copied / Int64(pageSize)))
    }

    static func close(_ fd: Int32) { _ = Glibc.close(fd) }

    /// Reads `count` bytes of `fd` at `offset` into `staging`: the bytes read (fewer at the file's end), or -errno.
    @inline(__always)
    static func read(_ fd: Int32, offset: UInt64, count: Int, into staging: StagingPage) -> Int {
        var done = 0
        while done < count {
            switch UnsafeSystemCall.retryingInterrupts({ unsafe pread(fd, staging.pointer + done, count - done, off_t(offset) + off_t(done)) }, failed: { $0 < 0 }) {
            case let .failure(errno): return -Int(errno.rawValue)
            case .success(0): return done
            case let .success(got): done += got
            }
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

    /// Whether the first `count` bytes of `staging` hash to `directory`'s code slot `slot`.
    @inline(__always)
    static func verify(_ staging: StagingPage, count: Int, against directory: CS_CodeDirectory, slot: Int) -> Bool {
        unsafe directory.verifyPage(unsafeBytes: UnsafeRawBufferPointer(start: staging.pointer, count: min(count, Int(pageSize))), slot: slot)
    }

    // MARK: The SIGBUS handler and its registry of live regions

    /// Installs the process-wide SIGBUS handler (once; later calls do nothing).
    static func installHandler() -> SystemCallFailure? {
        let result = dyld3_pagein_install()
        return result == 0 ? nil : failure(result, "sigaction(SIGBUS)")
    }

    /// Makes `[start, end)` live (a SIGBUS there calls `context.fill`): its slot, or nil when all ``regionCapacity`` are taken.
    static func activate(start: UInt64, end: UInt64, context: FaultContext) -> Int32? {
        let slot = unsafe dyld3_pagein_activate(start, end, Unmanaged.passUnretained(context).toOpaque(), { owner, address, staging in
            let context = unsafe Unmanaged<FaultContext>.fromOpaque(owner!).takeUnretainedValue()
            return unsafe context.fill(address, staging: StagingPage(pointer: staging!)) ? 1 : 0
        })
        return slot >= 0 ? slot : nil
    }

    /// Ends a region and waits up to a second for running fills: false when one still runs.
    static func deactivate(_ slot: Int32) -> Bool { dyld3_pagein_deactivate(slot, 1_000_000_000) != 0 }

    /// Keeps `object` alive for good (what a fill that never returned may still read).
    static func keepForever(_ object: AnyObject) { _ = unsafe Unmanaged.passRetained(object) }

    static let regionCapacity = Int(DYLD3_PAGEIN_REGIONS)

    /// Writes `dyld3: page-in: PATH: cannot fill page +0xVMOFFSET: REASON\n` to standard error, without allocating.
    static func report(path: String, vmOffset: UInt64, reason: StaticString) {
        let start: StaticString = "dyld3: page-in: ", middle: StaticString = ": cannot fill "
        unsafe dyld3_pagein_report(start.utf8Start, UInt64(start.utf8CodeUnitCount))
        _ = unsafe path.utf8.withContiguousStorageIfAvailable { unsafe dyld3_pagein_report($0.baseAddress, UInt64($0.count)) }
        unsafe dyld3_pagein_report(middle.utf8Start, UInt64(middle.utf8CodeUnitCount))
        var digits: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        unsafe withUnsafeMutableBytes(of: &digits) { buffer in
            var length = 0
            for byte in "page +0x".utf8 { unsafe buffer[length] = byte; length += 1 }
            var top = 60
            while top > 0 && (vmOffset >> UInt64(top)) & 0xf == 0 { top -= 4 }
            for shift in stride(from: top, through: 0, by: -4) {
                let nibble = UInt8((vmOffset >> UInt64(shift)) & 0xf)
                unsafe buffer[length] = nibble < 10 ? 0x30 + nibble : 0x57 + nibble
                length += 1
            }
            unsafe buffer[length] = 0x3a; unsafe buffer[length + 1] = 0x20
            unsafe dyld3_pagein_report(buffer.baseAddress, UInt64(length + 2))
        }
        unsafe dyld3_pagein_report(reason.utf8Start, UInt64(reason.utf8CodeUnitCount))
        var newline: UInt8 = 0x0a
        unsafe dyld3_pagein_report(&newline, 1)
    }

    /// The failure of a shim call that returned `-errno`.
    private static func failure(_ negativeErrno: Int32, _ call: String) -> SystemCallFailure {
        SystemCallFailure(call, UnsafeSystemCall.errno(returned: negativeErrno), namesCall: true)
    }
}
