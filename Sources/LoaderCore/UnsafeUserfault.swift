#if canImport(Glibc)
import Glibc
#endif
import CUserfault
import LaunchPlan

/// The page-in handler's contact with the kernel: the userfaultfd and its ioctls (through
/// the `CUserfault` shim), the handler thread, the staging page a page is assembled in,
/// and reading a page's file bytes. Everything here is called by ``FixupPager`` with
/// ranges it registered and addresses it checked.
enum UnsafeUserfault {
    /// A userfaultfd with the API handshake done, or the call that failed.
    static func open(userModeOnly: Bool) -> Result<Int32, SystemCallFailure> {
        var throughDevice: Int32 = 0
        let fd = unsafe dyld3_uffd_open(userModeOnly ? 1 : 0, &throughDevice)
        guard fd >= 0 else { return .failure(failure(fd, "userfaultfd")) }
        let api = dyld3_uffd_api(fd)
        guard api == 0 else {
            Glibc.close(fd)
            return .failure(failure(api, "UFFDIO_API"))
        }
        return .success(fd)
    }

    static func register(_ fd: Int32, start: UInt64, length: UInt64) -> SystemCallFailure? {
        let result = dyld3_uffd_register(fd, start, length)
        return result == 0 ? nil : failure(result, "UFFDIO_REGISTER")
    }

    /// Installs the staging page at `address` and wakes whoever waits on it; the errno on
    /// failure (EEXIST: the page was already filled, its waiters are woken).
    @inline(__always)
    static func copy(_ fd: Int32, page address: UInt64, from staging: StagingPage) -> Int32 {
        unsafe -dyld3_uffd_copy(fd, address, staging.pointer, staging.size)
    }

    /// Takes `address`'s page away from the handler and from everyone: inaccessible, then
    /// unregistered, its waiters woken (they fault again and get SIGSEGV; a system call
    /// touching it gets EFAULT). The handler's answer to a page it cannot fill. The order
    /// matters: unregistering wakes the page's waiters, and one that ran before the page
    /// was inaccessible would fault in a zero page and read zeros as the image's bytes.
    static func poison(_ fd: Int32, page address: UInt64, size: UInt64) {
        _ = unsafe mprotect(UnsafeMutableRawPointer(bitPattern: UInt(address)), Int(size), PROT_NONE)
        _ = dyld3_uffd_unregister(fd, address, size)
        _ = dyld3_uffd_wake(fd, address, size)
    }

    /// Wakes whoever waits on `address`'s page without filling it (the range is gone: they
    /// fault again on an unmapped address).
    static func wake(_ fd: Int32, page address: UInt64, size: UInt64) {
        _ = dyld3_uffd_wake(fd, address, size)
    }

    /// The page faults pending now, read with one read(2) into `batch` (at most
    /// ``FaultBatch/capacity``): how many, and whether the batch was full (read again before
    /// waiting), or the failure.
    @inline(__always)
    static func readFaults(_ fd: Int32, into batch: FaultBatch) -> Result<(count: Int, full: Bool), SystemCallFailure> {
        var full: Int32 = 0
        let result = unsafe dyld3_uffd_read_faults(fd, batch.addresses, &full)
        guard result >= 0 else { return .failure(failure(result, "read(userfaultfd)")) }
        return .success((Int(result), full != 0))
    }

    /// Room for the fault addresses one read returns, allocated once per pager.
    @safe struct FaultBatch: @unchecked Sendable {
        static let capacity = Int(DYLD3_UFFD_BATCH)
        let addresses: UnsafeMutablePointer<UInt64>

        static func allocate() -> FaultBatch { unsafe FaultBatch(addresses: .allocate(capacity: capacity)) }

        @inline(__always)
        subscript(index: Int) -> UInt64 { unsafe addresses[index] }

        func free() { unsafe addresses.deallocate() }
    }

    static func stopEvent() -> Result<Int32, SystemCallFailure> {
        let fd = dyld3_stop_event()
        return fd >= 0 ? .success(fd) : .failure(failure(fd, "eventfd"))
    }

    static func signalStop(_ fd: Int32) { _ = dyld3_signal_stop(fd) }

    /// Waits for a fault or the stop event: (fault pending, stop signalled), or the failure.
    static func wait(_ fd: Int32, stop: Int32) -> Result<(fault: Bool, stop: Bool), SystemCallFailure> {
        let ready = dyld3_wait(fd, stop)
        guard ready >= 0 else { return .failure(failure(ready, "poll")) }
        return .success((ready & 1 != 0, ready & 2 != 0))
    }

    static func close(_ fd: Int32) { _ = Glibc.close(fd) }

    static func duplicate(_ fd: Int32) -> Result<Int32, SystemCallFailure> {
        UnsafeSystemCall.retryingInterrupts({ fcntl(fd, F_DUPFD_CLOEXEC, 0) }, failed: { $0 < 0 }).failing("fcntl")
    }

    /// Reads `count` bytes of `fd` at `offset` into the start of `staging`; the bytes read
    /// (fewer when the file is shorter), or -errno.
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

    /// Zeroes `staging` from byte `from` to its end.
    @inline(__always)
    static func zero(_ staging: StagingPage, from: Int) {
        guard from < Int(staging.size) else { return }
        unsafe (staging.pointer + from).initializeMemory(as: UInt8.self, repeating: 0, count: Int(staging.size) - from)
    }

    /// One page of anonymous memory, never registered, that a page is assembled in before
    /// `UFFDIO_COPY` installs it.
    @safe struct StagingPage: @unchecked Sendable {
        let pointer: UnsafeMutableRawPointer
        let size: UInt64

        static func allocate(size: UInt64) -> Result<StagingPage, SystemCallFailure> {
            unsafe UnsafeSystemCall.mapping { unsafe mmap(nil, Int(size), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) }
                .failing("mmap")
                .map { unsafe StagingPage(pointer: $0, size: size) }
        }

        var address: UInt64 { unsafe UInt64(UInt(bitPattern: pointer)) }

        func free() { _ = unsafe munmap(pointer, Int(size)) }
    }

    /// The handler thread's name (`/proc/self/task/*/comm`).
    static let threadName = "dyld3-pagein"

    /// Starts a thread named ``threadName`` running `body` (the handler loop); the thread to join.
    static func startThread(_ body: @escaping @Sendable () -> Void) -> Result<pthread_t, SystemCallFailure> {
        final class Box: @unchecked Sendable {
            let body: @Sendable () -> Void
            init(_ body: @escaping @Sendable () -> Void) { self.body = body }
        }
        let context = unsafe Unmanaged.passRetained(Box(body)).toOpaque()
        var thread = pthread_t()
        let result = unsafe pthread_create(&thread, nil, { context in
            _ = unsafe dyld3_name_thread(UnsafeUserfault.threadName)
            unsafe Unmanaged<Box>.fromOpaque(context!).takeRetainedValue().body()
            return nil
        }, unsafe context)
        guard result == 0 else {
            unsafe Unmanaged<Box>.fromOpaque(context).release()
            return .failure(SystemCallFailure("pthread_create", UnsafeSystemCall.errno(returned: result)))
        }
        return .success(thread)
    }

    static func join(_ thread: pthread_t) { _ = pthread_join(thread, nil) }

    static func yield() { _ = sched_yield() }

    /// The failure of a shim call that returned `-errno` (the shim retries `EINTR` itself).
    private static func failure(_ negativeErrno: Int32, _ call: String) -> SystemCallFailure {
        SystemCallFailure(call, UnsafeSystemCall.errno(returned: negativeErrno), namesCall: true)
    }
}
