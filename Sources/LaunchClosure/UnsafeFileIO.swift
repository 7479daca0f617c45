#if canImport(Glibc)
import Glibc
#endif
import LoaderCore
import MachOReader

/// The closure code's system calls: opening a file once without following symlinks, the
/// effective user, and writing a file atomically (temp file in the
/// same directory, fsync, read-only mode, rename, fsync of the directory).
enum UnsafeFileIO {
    /// The user this process acts as.
    static var effectiveUserID: UInt32 { UInt32(geteuid()) }

    /// Why a file could not be opened for reading.
    enum OpenFailure: Error {
        case missing
        case refused(String)
    }

    /// A regular file opened read-only, and its `fstat`.
    final class OpenFile {
        let fd: Int32
        let status: FileStatus

        init(fd: Int32, status: FileStatus) {
            self.fd = fd
            self.status = status
        }

        /// Everything in the file (its `fstat` size, which the caller has bounded), or nil on a read error.
        func readAll() -> [UInt8]? {
            let size = Int(status.size)
            var bytes = [UInt8](repeating: 0, count: size)
            var done = 0
            while done < size {
                let got = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + done, size - done, off_t(done)) }
                if got < 0, errno == EINTR { continue }
                guard got > 0 else { return got == 0 ? Array(bytes.prefix(done)) : nil }
                done += got
            }
            return bytes
        }

        /// The whole file (its `fstat` size, which the caller has bounded) mapped read-only,
        /// or nil when it cannot be mapped. The mapping outlives the descriptor and is
        /// unmapped with the last view onto it. A file its owner truncates while it is mapped
        /// makes a read past the new end fault, as for any mapped file: closures are replaced
        /// by rename, never rewritten in place (see docs/security.md).
        func mapAll() -> ByteView? {
            let size = Int(status.size)
            guard size > 0 else { return ByteView([]) }
            let address = mmap(nil, size, PROT_READ, MAP_PRIVATE, fd, 0)
            guard let address, address != MAP_FAILED else { return nil }
            return ByteView(ByteStorage(unsafeStart: UnsafeRawPointer(address), count: size) { start, count in
                _ = munmap(UnsafeMutableRawPointer(mutating: start), count)
            })
        }

        deinit { close(fd) }
    }

    /// Opens `path` read-only without following a symlink at its last component; refuses
    /// anything but a regular file.
    static func openNoFollow(_ path: String) -> Result<OpenFile, OpenFailure> {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else {
            switch errno {
            case ENOENT, ENOTDIR: return .failure(.missing)
            case ELOOP: return .failure(.refused("is a symbolic link"))
            default: return .failure(.refused("cannot be opened: \(String(cString: strerror(errno)))"))
            }
        }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            close(fd)
            return .failure(.refused("cannot be examined"))
        }
        let status = FileStatus(info)
        guard status.isRegularFile else {
            close(fd)
            return .failure(.refused("is not a regular file"))
        }
        return .success(OpenFile(fd: fd, status: status))
    }

    /// Whether process `pid` still exists (a writer whose temporary file is in progress).
    static func processExists(_ pid: Int32) -> Bool {
        kill(pid, 0) == 0 || errno != ESRCH
    }

    /// Writes `bytes` to `path` atomically with `mode` (0444 unless said). On failure nothing
    /// at `path` changed.
    static func writeAtomically(_ bytes: [UInt8], to path: String, mode: UInt32 = 0o444) -> String? {
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
        if failure == nil, fchmod(fd, mode_t(mode)) != 0 { failure = "chmod: \(String(cString: strerror(errno)))" }
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
