#if canImport(Glibc)
import Glibc
#endif

/// System calls that make the kernel touch a page on the process's behalf (page-in tests):
/// the kernel-mode faults `UFFD_USER_MODE_ONLY` does not deliver.
enum UnsafeKernelTouch {
    /// read(2) of `count` bytes from a pipe holding `bytes` into `address`: 0, or the errno.
    static func readFromPipe(_ bytes: [UInt8], into address: UInt64) -> Int32 {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { return errno }
        defer { close(fds[0]); close(fds[1]) }
        guard write(fds[1], bytes, bytes.count) == bytes.count else { return errno }
        let got = read(fds[0], UnsafeMutableRawPointer(bitPattern: UInt(address)), bytes.count)
        return got == bytes.count ? 0 : (got < 0 ? errno : EIO)
    }

    /// write(2) of `count` bytes at `address` into a pipe (which copies them, unlike
    /// /dev/null): 0, or the errno.
    static func writeToPipe(from address: UInt64, count: Int) -> Int32 {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { return errno }
        defer { close(fds[0]); close(fds[1]) }
        let done = write(fds[1], UnsafeRawPointer(bitPattern: UInt(address)), count)
        return done == count ? 0 : (done < 0 ? errno : EIO)
    }

    /// The 8 bytes at `address` (a page the launch mapped).
    static func load(_ address: UInt64) -> UInt64 {
        UnsafeRawPointer(bitPattern: UInt(address))!.loadUnaligned(as: UInt64.self)
    }
}
