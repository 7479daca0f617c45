#if canImport(Glibc)
import Glibc
#endif
import LoaderCore
import MachOReader
import SystemPackage
import LaunchPlan
import ClosureFormat
import LoaderSystem

/// The closure code's system calls: opening a file once without following symlinks, the
/// effective user, and writing a file atomically (temp file beside it, fsync, read-only
/// mode, rename, fsync of the directory).
package enum UnsafeFileIO {
    /// The user this process acts as.
    package static var effectiveUserID: UInt32 { UInt32(geteuid()) }

    /// A regular file opened read-only, and its `fstat`.
    package final class OpenFile {
        package let fd: Int32
        package let status: FileStatus

        init(fd: Int32, status: FileStatus) {
            (self.fd, self.status) = (fd, status)
        }

        /// Everything in the file (its `fstat` size, which the caller has bounded), or nil on a read error.
        func readAll() -> [UInt8]? {
            let size = Int(status.size)
            var bytes = [UInt8](repeating: 0, count: size)
            var done = 0
            while done < size {
                let read = unsafe bytes.withUnsafeMutableBytes { buffer in
                    UnsafeSystemCall.retryingInterrupts({ unsafe pread(fd, buffer.baseAddress! + done, size - done, off_t(done)) }, failed: { $0 < 0 })
                }
                switch read {
                case .failure: return nil
                case .success(0): return Array(bytes.prefix(done))
                case let .success(got): done += got
                }
            }
            return bytes
        }

        /// Up to `count` bytes at `offset` (fewer at the end of the file or on a read error).
        package func read(offset: UInt64, count: Int) -> [UInt8] {
            unsafe [UInt8](unsafeUninitializedCapacity: max(0, count)) { buffer, initialized in
                var done = 0
                while done < count {
                    let got = UnsafeSystemCall.retryingInterrupts({ unsafe pread(fd, buffer.baseAddress! + done, count - done, off_t(offset) + off_t(done)) },
                                                                  failed: { $0 < 0 })
                    guard case let .success(read) = got, read > 0 else { break }
                    done += read
                }
                initialized = done
            }
        }

        /// The whole file (its bounded `fstat` size), or nil: read when small, else mapped
        /// read-only and unmapped with the last view onto it. Truncating a mapped file makes reads
        /// past its end fault: closures are replaced by rename, never rewritten in place
        /// (docs/security.md).
        package func mapAll() -> ByteView? {
            let size = Int(status.size)
            guard size > 0 else { return ByteView([]) }
            // A small file is read: a copy costs less than a mapping's fault and unmapping.
            if size <= Self.readBelow { return readAll().map { ByteView($0) } }
            guard case let .success(address) = unsafe UnsafeSystemCall.mapping({ unsafe mmap(nil, size, PROT_READ, MAP_PRIVATE, fd, 0) }) else { return nil }
            return unsafe ByteView(ByteStorage(unsafeStart: UnsafeRawPointer(address), count: size) { start, count in
                _ = unsafe munmap(UnsafeMutableRawPointer(mutating: start), count)
            })
        }

        /// Files up to this size are read rather than mapped by ``mapAll()``.
        static let readBelow = 64 << 10

        deinit { close(fd) }
    }

    /// Opens `path` read-only without following a symlink at its last component; refuses
    /// anything but a regular file (``ClosureError/untrusted(path:what:)``).
    package static func openNoFollow(_ path: String) -> Result<OpenFile, ClosureError> {
        let fd: Int32
        switch UnsafeSystemCall.retryingInterrupts({ unsafe open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK) }, failed: { $0 < 0 }) {
        case let .success(opened): fd = opened
        case .failure(.noSuchFileOrDirectory), .failure(.notDirectory): return .failure(.missing(path: path))
        case .failure(.tooManySymbolicLinkLevels): return .failure(.untrusted(path: path, what: "is a symbolic link"))
        case let .failure(errno): return .failure(.untrusted(path: path, what: "cannot be opened: \(errno)"))
        }
        var info = stat()
        guard case .success = UnsafeSystemCall.retryingInterrupts({ unsafe fstat(fd, &info) }, failed: { $0 != 0 }) else {
            close(fd)
            return .failure(.untrusted(path: path, what: "cannot be examined"))
        }
        let status = FileStatus(info)
        guard status.isRegularFile else {
            close(fd)
            return .failure(.untrusted(path: path, what: "is not a regular file"))
        }
        return .success(OpenFile(fd: fd, status: status))
    }

    /// ``openNoFollow(_:)``, a missing file refused as `missing` (what it means to the caller).
    package static func openNoFollow(_ path: String, ifMissing missing: ClosureError) -> Result<OpenFile, ClosureError> {
        openNoFollow(path).mapError { error in
            guard case .missing = error else { return error }
            return missing
        }
    }

    /// Whether process `pid` still exists (a writer whose temporary file is in progress).
    static func processExists(_ pid: Int32) -> Bool {
        kill(pid, 0) == 0 || errno != ESRCH
    }

    /// Writes a file of the closure cache (``writeAtomically(_:to:mode:)``, read-only); the
    /// call that failed as a ``ClosureError/systemCallFailed(path:_:)``.
    package static func writeCacheFile(_ bytes: [UInt8], to path: String) throws(ClosureError) {
        do throws(LoadError) {
            try writeAtomically(bytes, to: path)
        } catch {
            throw .systemCallFailed(path: path, error)
        }
    }

    /// Writes `bytes` to `path` atomically with `mode` (0444 unless said); the call that
    /// failed otherwise, after which nothing at `path` changed.
    package static func writeAtomically(_ bytes: [UInt8], to path: String, mode: UInt32 = 0o444) throws(LoadError) {
        let directory = PathResolver.containingDirectory(of: path)
        let temporary = "\(directory == "/" ? "" : directory)/.\(path.split(separator: "/").last ?? "closure").tmp.\(getpid()).\(UInt32.random(in: 0...UInt32.max))"
        let fd = try UnsafeSystemCall.retryingInterrupts({ unsafe open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600) }, failed: { $0 < 0 })
            .failing("create \(temporary)", namesCall: true).get()
        var failure: SystemCallFailure?
        var written = 0
        while failure == nil, written < bytes.count {
            let result = unsafe bytes.withUnsafeBytes { buffer in
                UnsafeSystemCall.retryingInterrupts({ unsafe write(fd, buffer.baseAddress! + written, buffer.count - written) }, failed: { $0 < 0 })
            }
            switch result {
            case let .success(count): written += count
            case let .failure(errno): failure = SystemCallFailure("write", errno, namesCall: true)
            }
        }
        if failure == nil, case let .failure(errno) = UnsafeSystemCall.retryingInterrupts({ fsync(fd) }, failed: { $0 != 0 }) {
            failure = SystemCallFailure("fsync", errno, namesCall: true)
        }
        if failure == nil, case let .failure(errno) = UnsafeSystemCall.retryingInterrupts({ fchmod(fd, mode_t(mode)) }, failed: { $0 != 0 }) {
            failure = SystemCallFailure("chmod", errno, namesCall: true)
        }
        close(fd)
        if failure == nil, case let .failure(errno) = UnsafeSystemCall.once({ unsafe rename(temporary, path) }, failed: { $0 != 0 }) {
            failure = SystemCallFailure("rename", errno, namesCall: true)
        }
        if let failure {
            unsafe unlink(temporary)
            throw .systemCall(failure)
        }
        if case let .success(directoryFD) = UnsafeSystemCall.retryingInterrupts({
            unsafe open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        }, failed: { $0 < 0 }) {
            _ = UnsafeSystemCall.retryingInterrupts({ fsync(directoryFD) }, failed: { $0 != 0 })
            close(directoryFD)
        }
    }
}
