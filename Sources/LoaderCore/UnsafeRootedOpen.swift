#if canImport(Glibc)
import Glibc
#endif
import MachOReader
import LaunchPlan
import LoaderSystem

/// Opens a file inside a root directory as if the root were `/`: `..` stops at the root and
/// symlinks resolve inside it, one component at a time with `openat(O_PATH | O_NOFOLLOW)` and
/// `readlinkat` (`openat2(RESOLVE_IN_ROOT)` without Linux 5.6). Only regular files are opened
/// for reading, so a FIFO or a device never blocks the loader.
enum UnsafeRootedOpen {
    /// Links followed per lookup before giving up, as the kernel's `ELOOP` limit.
    static let maxSymlinks = 40
    /// Linux `O_PATH` (glibc hides it without `_GNU_SOURCE`): names a file without opening it for reading.
    static let openPathOnly: Int32 = 0o10000000

    static func refused(_ reason: String) -> LoadError {
        .systemCall(SystemCallFailure("open", refused: reason))
    }

    /// `path` (relative to `root`) mapped read-only, and the path inside the root of the file mapped.
    static func map(_ path: String, inRoot root: String) throws(LoadError) -> (bytes: ByteStorage, resolved: String, status: FileStatus) {
        let rootFD = try open(root, openPathOnly | O_DIRECTORY | O_CLOEXEC, call: "open root \(root)").get()
        // Directories from the root down: their descriptors and names.
        var directories: [(fd: Int32, name: String)] = [(rootFD, "")]
        defer { for directory in directories { _ = Glibc.close(directory.fd) } }
        var pending = components(path).reversed() as [String]
        var links = 0
        while let name = pending.popLast() {
            if name == "." { continue }
            if name == ".." {
                if directories.count > 1 { _ = Glibc.close(directories.removeLast().fd) }
                continue
            }
            let parent = directories[directories.count - 1].fd
            let fd = try open(name, in: parent, openPathOnly | O_NOFOLLOW | O_CLOEXEC).get()
            var info = stat()
            if case let .failure(failure) = status(fd, name, into: &info) {
                _ = Glibc.close(fd)
                throw failure
            }
            switch info.st_mode & S_IFMT {
            case S_IFLNK:
                _ = Glibc.close(fd)
                links += 1
                guard links <= maxSymlinks else { throw refused("too many levels of symbolic links inside the root") }
                let target = try readLink(parent, name).get()
                if target.hasPrefix("/") {
                    while directories.count > 1 { _ = Glibc.close(directories.removeLast().fd) }
                }
                pending += components(target).reversed()
            case S_IFDIR:
                directories.append((fd, name))
            case S_IFREG where pending.isEmpty:
                _ = Glibc.close(fd)
                let resolved = "/" + (directories.dropFirst().map(\.name) + [name]).joined(separator: "/")
                let (bytes, status) = try mapRegular(parent, name, expecting: info)
                return (bytes, resolved, status)
            case S_IFREG:
                _ = Glibc.close(fd)
                throw refused("\(name) is not a directory")
            default:
                _ = Glibc.close(fd)
                throw refused("not a regular file")
            }
        }
        throw refused("not a regular file")
    }

    /// `path` (absolute) as the kernel resolves it, where no root confines it, mapped
    /// read-only: named first (`O_PATH`), opened for reading only once that is a regular file,
    /// and mapped once the file opened is still that one (same device and inode).
    static func mapUnconfined(_ path: String) throws(LoadError) -> (bytes: ByteStorage, status: FileStatus) {
        let named = try open(path, openPathOnly | O_CLOEXEC).get()
        var info = stat()
        let namedStatus = status(named, path, into: &info)
        _ = Glibc.close(named)
        try namedStatus.get()
        guard info.st_mode & S_IFMT == S_IFREG else { throw refused("not a regular file") }
        return try mapRegular(AT_FDCWD, path, expecting: info, flags: O_RDONLY | O_NONBLOCK | O_CLOEXEC)
    }

    private static func components(_ path: String) -> [String] {
        path.split(separator: "/").map(String.init)
    }

    /// `openat(directory, name)`, named `call` when it fails.
    private static func open(_ name: String, in directory: Int32 = AT_FDCWD, _ flags: Int32, call: String? = nil) -> Result<Int32, LoadError> {
        UnsafeSystemCall.retryingInterrupts({ unsafe Glibc.openat(directory, name, flags) }, failed: { $0 < 0 })
            .failing(call ?? "open \(name)", namesCall: true)
    }

    private static func status(_ fd: Int32, _ name: String, into info: inout stat) -> Result<Void, LoadError> {
        UnsafeSystemCall.retryingInterrupts({ unsafe fstat(fd, &info) }, failed: { $0 != 0 })
            .map { _ in () }
            .failing("stat \(name)", namesCall: true)
    }

    private static func readLink(_ directory: Int32, _ name: String) -> Result<String, LoadError> {
        var buffer = [UInt8](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = unsafe buffer.withUnsafeMutableBufferPointer { pointer in
            unsafe pointer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: pointer.count) { target in
                UnsafeSystemCall.retryingInterrupts({ unsafe readlinkat(directory, name, target, pointer.count - 1) }, failed: { $0 < 0 })
            }
        }
        return count
            .map { String(decoding: buffer[0..<$0], as: UTF8.self) }
            .failing("readlink \(name)", namesCall: true)
    }

    /// Maps `name` read-only, opened with `flags` (by default without following a link), once
    /// it is still the regular file `expected` (same device and inode); and its status.
    private static func mapRegular(_ directory: Int32, _ name: String, expecting expected: stat,
                                   flags: Int32 = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) throws(LoadError) -> (ByteStorage, FileStatus) {
        let fd = try open(name, in: directory, flags).get()
        defer { _ = Glibc.close(fd) }
        var info = stat()
        try status(fd, name, into: &info).get()
        guard info.st_mode & S_IFMT == S_IFREG, info.st_dev == expected.st_dev, info.st_ino == expected.st_ino else {
            throw refused("not a regular file")
        }
        return (try UnsafeFileMapping.map(fd, size: Int(info.st_size), call: "mmap \(name)").get(), FileStatus(info))
    }
}
