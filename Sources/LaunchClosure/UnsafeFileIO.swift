#if canImport(Glibc)
import Glibc
#endif
import LoaderCore

/// The closure code's system calls: stat, and writing a file atomically (temp file in the
/// same directory, fsync, read-only mode, rename, fsync of the directory).
enum UnsafeFileIO {
    static func status(_ path: String) -> FileStatus? { FileStatus.of(path) }

    /// Whether process `pid` still exists (a writer whose temporary file is in progress).
    static func processExists(_ pid: Int32) -> Bool {
        kill(pid, 0) == 0 || errno != ESRCH
    }

    /// Writes `bytes` to `path` atomically with mode 0444. On failure nothing at `path` changed.
    static func writeAtomically(_ bytes: [UInt8], to path: String) -> String? {
        let directory = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        let temporary = "\(directory.isEmpty ? "." : directory)/.\(path.split(separator: "/").last ?? "closure").tmp.\(getpid()).\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return "create \(temporary): \(String(cString: strerror(errno)))" }
        var failure: String?
        var written = 0
        while failure == nil, written < bytes.count {
            let result = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, $0.count - written) }
            if result < 0 {
                if errno != EINTR { failure = "write: \(String(cString: strerror(errno)))" }
            } else {
                written += result
            }
        }
        if failure == nil, fsync(fd) != 0 { failure = "fsync: \(String(cString: strerror(errno)))" }
        if failure == nil, fchmod(fd, 0o444) != 0 { failure = "chmod: \(String(cString: strerror(errno)))" }
        close(fd)
        if failure == nil, rename(temporary, path) != 0 { failure = "rename: \(String(cString: strerror(errno)))" }
        if failure != nil {
            unlink(temporary)
            return failure
        }
        let directoryFD = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryFD >= 0 {
            fsync(directoryFD)
            close(directoryFD)
        }
        return nil
    }
}
