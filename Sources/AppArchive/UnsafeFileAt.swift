#if canImport(Glibc)
import Glibc
#endif
import CUnpack

/// The archive reader's system calls: the archive read by offset through one descriptor,
/// files and directories created relative to a directory descriptor without following a
/// symbolic link at any level, a small file read from the descriptor that was opened, and
/// the rename that publishes an unpacked tree. Failures are `errno` values.
enum UnsafeFileAt {
    /// A failed system call's `errno`; matches its `E…` constant in a `case` pattern.
    struct Failure: Error, Equatable {
        let errno: Int32

        static func ~= (pattern: Int32, failure: Failure) -> Bool { pattern == failure.errno }
    }

    /// What `fstat` says about an opened file.
    struct Status: Equatable, Sendable {
        var size: Int
        var mode: UInt32, owner: UInt32
        var inode: UInt64, device: UInt64
        var modifiedSeconds: Int64, modifiedNanoseconds: Int64
        var isRegularFile: Bool { mode & UInt32(Glibc.S_IFMT) == UInt32(Glibc.S_IFREG) }
        var isDirectory: Bool { mode & UInt32(Glibc.S_IFMT) == UInt32(Glibc.S_IFDIR) }
        var isSymbolicLink: Bool { mode & UInt32(Glibc.S_IFMT) == UInt32(Glibc.S_IFLNK) }

        init(_ info: stat) {
            (size, mode, owner) = (Int(info.st_size), UInt32(info.st_mode), UInt32(info.st_uid))
            (inode, device) = (UInt64(info.st_ino), UInt64(info.st_dev))
            (modifiedSeconds, modifiedNanoseconds) = (Int64(info.st_mtim.tv_sec), Int64(info.st_mtim.tv_nsec))
        }
    }

    /// An open descriptor, closed when released.
    final class Descriptor: Sendable {
        let fd: Int32
        init(_ fd: Int32) { self.fd = fd }
        deinit { _ = Glibc.close(fd) }

        /// `fstat` of the descriptor.
        func status() -> Result<Status, Failure> {
            var info = stat()
            return retrying({ unsafe fstat(fd, &info) }).map { _ in Status(info) }
        }

        /// `count` bytes at `offset`; fewer only where the file ends.
        func read(at offset: Int, count: Int) -> Result<[UInt8], Failure> {
            var bytes = [UInt8](repeating: 0, count: count)
            var done = 0
            while done < count {
                let result = unsafe bytes.withUnsafeMutableBytes { buffer in
                    retrying({ unsafe pread(fd, buffer.baseAddress! + done, count - done, off_t(offset + done)) })
                }
                switch result {
                case let .success(read) where read == 0: return .success(Array(bytes[..<done]))
                case let .success(read): done += read
                case let .failure(failure): return .failure(failure)
                }
            }
            return .success(bytes)
        }

        /// Writes all of `bytes`.
        func write(_ bytes: [UInt8]) -> Int32? {
            var done = 0
            while done < bytes.count {
                let result = unsafe bytes.withUnsafeBytes { buffer in
                    retrying({ unsafe Glibc.write(fd, buffer.baseAddress! + done, buffer.count - done) })
                }
                switch result {
                case let .success(written): done += written
                case let .failure(failure): return failure.errno
                }
            }
            return nil
        }

        /// Sets the permission bits.
        func setMode(_ mode: UInt32) -> Int32? { retrying({ fchmod(fd, mode_t(mode)) }).errno }
    }

    /// `path` opened read-only (`O_NONBLOCK`: a FIFO or device cannot hold the open);
    /// `noFollow` refuses a symbolic link at its last component (`ELOOP`).
    static func open(_ path: String, noFollow: Bool = false, directory: Bool = false) -> Result<Descriptor, Failure> {
        let flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | (noFollow ? O_NOFOLLOW : 0) | (directory ? O_DIRECTORY : 0)
        return retrying({ unsafe Glibc.open(path, flags) }).map(Descriptor.init)
    }

    /// `mkdir(path, mode)`.
    static func makeDirectory(_ path: String, mode: UInt32) -> Int32? { retrying({ unsafe mkdir(path, mode_t(mode)) }).errno }

    /// The directory `name` (one component, no `/`) in `directory`, opened without
    /// following a symbolic link (`ELOOP` or `ENOTDIR` when it is one, or not a directory).
    static func openDirectory(_ name: [UInt8], in directory: Descriptor) -> Result<Descriptor, Failure> {
        open(name, in: directory, O_RDONLY | O_CLOEXEC | O_DIRECTORY | O_NOFOLLOW)
    }

    /// The directory at relative `path` (components joined by `/`) under `directory`,
    /// resolved beneath it and through no symbolic link at any level (`openat2` with
    /// `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`); `ENOSYS` where the kernel cannot.
    static func openDirectoryBeneath(_ path: [UInt8], in directory: Descriptor) -> Result<Descriptor, Failure> {
        unsafe withName(path) { path in
            let result = retrying({ unsafe dyld3_open_beneath(directory.fd, path, O_RDONLY | O_CLOEXEC | O_DIRECTORY, 0) }, failed: { $0 < 0 }, errno: { -$0 })
            return result.map(Descriptor.init)
        }
    }

    /// `fstatat` of `name` in `directory`, a symbolic link itself rather than its target.
    static func linkStatus(_ name: [UInt8], in directory: Descriptor) -> Status? {
        var info = stat()
        return unsafe withName(name) { name in
            unsafe fstatat(directory.fd, name, &info, AT_SYMLINK_NOFOLLOW) == 0 ? Status(info) : nil
        }
    }

    /// `mkdirat(directory, name, mode)`; `EEXIST` when something has the name.
    static func makeDirectory(_ name: [UInt8], in directory: Descriptor, mode: UInt32) -> Int32? {
        unsafe withName(name) { name in retrying({ unsafe mkdirat(directory.fd, name, mode_t(mode)) }).errno }
    }

    /// A new regular file `name` in `directory`, write-only, mode 0600 until set: never an
    /// existing file and never through a link (`O_CREAT | O_EXCL | O_NOFOLLOW`).
    static func createFile(_ name: [UInt8], in directory: Descriptor) -> Result<Descriptor, Failure> {
        open(name, in: directory, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC)
    }

    /// The regular file `name` in `directory`, opened read-only without following a link.
    static func openFile(_ name: [UInt8], in directory: Descriptor) -> Result<Descriptor, Failure> {
        open(name, in: directory, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
    }

    /// `openat(directory, name, flags)`, a created file mode 0600.
    private static func open(_ name: [UInt8], in directory: Descriptor, _ flags: Int32) -> Result<Descriptor, Failure> {
        unsafe withName(name) { name in retrying({ unsafe openat(directory.fd, name, flags, 0o600) }).map(Descriptor.init) }
    }

    /// Renames `from` to `to` in `directory` unless `to` exists (`EEXIST`, or `ENOTEMPTY`
    /// for a directory where the file system cannot be told not to replace).
    static func renameNoReplace(_ from: [UInt8], to: [UInt8], in directory: Descriptor) -> Int32? {
        unsafe withName(from) { from in
            unsafe withName(to) { to in
                let result = unsafe dyld3_rename_noreplace(directory.fd, from, to)
                guard result == -EINVAL || result == -ENOSYS else { return result == 0 ? nil : -result }
                // No RENAME_NOREPLACE here: a plain rename still refuses a non-empty directory.
                return unsafe renameat(directory.fd, from, directory.fd, to) == 0 ? nil : Glibc.errno
            }
        }
    }

    /// Renames `from` to `to` in `directory`, replacing `to`.
    static func rename(_ from: [UInt8], to: [UInt8], in directory: Descriptor) -> Int32? {
        unsafe withName(from) { from in
            unsafe withName(to) { to in unsafe renameat(directory.fd, from, directory.fd, to) == 0 ? nil : Glibc.errno }
        }
    }

    /// Removes the file `name` from `directory`.
    static func unlink(_ name: [UInt8], in directory: Descriptor) {
        unsafe withName(name) { name in _ = unsafe unlinkat(directory.fd, name, 0) }
    }

    /// Whether process `pid` still exists.
    static func processExists(_ pid: Int32) -> Bool {
        kill(pid, 0) == 0 || Glibc.errno != ESRCH
    }

    static var processID: Int32 { getpid() }

    /// `strerror`'s words for `errno`.
    static func describe(_ errno: Int32) -> String {
        unsafe String(cString: strerror(errno))
    }

    /// `strerror`'s words for a failure.
    static func describe(_ failure: Failure) -> String { describe(failure.errno) }

    /// `name` as a NUL-terminated C string for `body`.
    private static func withName<T>(_ name: [UInt8], _ body: (UnsafePointer<CChar>) -> T) -> T {
        unsafe (name + [0]).withUnsafeBufferPointer { buffer in
            unsafe buffer.withMemoryRebound(to: CChar.self) { unsafe body($0.baseAddress!) }
        }
    }

    /// Runs `call` again while it fails with `EINTR` (a negative result sets `errno`).
    private static func retrying<T: BinaryInteger>(_ call: () -> T) -> Result<T, Failure> {
        retrying(call, failed: { $0 < 0 }, errno: { _ in Glibc.errno })
    }

    private static func retrying<T>(_ call: () -> T, failed: (T) -> Bool, errno: (T) -> Int32) -> Result<T, Failure> {
        while true {
            let result = call()
            guard failed(result) else { return .success(result) }
            let error = errno(result)
            if error != EINTR { return .failure(Failure(errno: error)) }
        }
    }
}

private extension Result where Failure == UnsafeFileAt.Failure {
    /// The failure's `errno`; nil on success.
    var errno: Int32? { if case let .failure(failure) = self { failure.errno } else { nil } }
}
