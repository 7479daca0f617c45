#if canImport(Glibc)
import Glibc
#endif
import CXXHash
import LaunchPlan
import MachOReader

/// What `stat` says about a file.
package struct FileStatus: Equatable, Sendable {
    package var size: UInt64
    package var mtimeSeconds: Int64
    package var mtimeNanoseconds: UInt64
    package var inode: UInt64
    /// Status-change time: set by the kernel on every write, chmod or utimes, never settable.
    package var ctimeSeconds: Int64
    package var ctimeNanoseconds: UInt64
    package var mode: UInt32
    package var ownerID: UInt32
    package var isRegularFile: Bool { mode & UInt32(S_IFMT) == UInt32(S_IFREG) }
    package var isDirectory: Bool { mode & UInt32(S_IFMT) == UInt32(S_IFDIR) }
    package var isSymbolicLink: Bool { mode & UInt32(S_IFMT) == UInt32(S_IFLNK) }

    /// A status with the given size, mode and owner, and no times (for policy checks).
    package init(size: UInt64, mode: UInt32, ownerID: UInt32) {
        (self.size, mtimeSeconds, mtimeNanoseconds, inode, ctimeSeconds, ctimeNanoseconds) = (size, 0, 0, 0, 0, 0)
        (self.mode, self.ownerID) = (mode, ownerID)
    }

    /// The fields of a `stat` the caller filled.
    package init(_ info: stat) {
        size = UInt64(info.st_size)
        mtimeSeconds = Int64(info.st_mtim.tv_sec)
        mtimeNanoseconds = UInt64(info.st_mtim.tv_nsec)
        inode = UInt64(info.st_ino)
        ctimeSeconds = Int64(info.st_ctim.tv_sec)
        ctimeNanoseconds = UInt64(info.st_ctim.tv_nsec)
        mode = UInt32(info.st_mode)
        ownerID = UInt32(info.st_uid)
    }

    /// `stat(path)`, or nil when the path does not name a file.
    package static func of(_ path: String) -> FileStatus? {
        var info = stat()
        return unsafe stat(path, &info) == 0 ? FileStatus(info) : nil
    }

    /// The status of `path` itself, a symbolic link not followed (`lstat`).
    package static func ofLink(_ path: String) -> FileStatus? {
        var info = stat()
        return unsafe lstat(path, &info) == 0 ? FileStatus(info) : nil
    }
}

/// One image file opened once for a launch: its identity is taken (`fstat`, and the
/// content hash when asked) and its segments are mapped through this same descriptor, so
/// the file that was checked is the file that is mapped, whatever happens to its path
/// meanwhile. Closed when released.
package final class ImageDescriptor: Sendable {
    package let path: String
    package let fd: Int32
    /// `fstat` of the open file.
    package let status: FileStatus

    /// Why a file is refused for being something other than a regular file: the reason the
    /// slow path gives for the same file (`LoadError.unusable`), word for word.
    package static let notRegularFile = "not a regular file"

    /// Opens `path` read-only; the failed call when it cannot be opened or is not a regular
    /// file. `O_NONBLOCK`: a FIFO with no writer, or a device, would otherwise hold the open
    /// forever; `fstat` refuses it before anything is read (a regular file ignores the flag).
    /// Throws rather than returning a `Result`: a launch opens every image through it, and the
    /// first `Result` of these types costs a fresh process a conformance lookup.
    package static func open(_ path: String) throws(LoadError) -> ImageDescriptor {
        let fd: Int32
        switch UnsafeSystemCall.retryingInterrupts({ unsafe Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK) }, failed: { $0 < 0 }) {
        case let .success(opened): fd = opened
        case let .failure(errno): throw .systemCall(SystemCallFailure("open", errno))
        }
        var info = stat()
        if case let .failure(errno) = UnsafeSystemCall.retryingInterrupts({ unsafe fstat(fd, &info) }, failed: { $0 != 0 }) {
            _ = Glibc.close(fd)
            throw .systemCall(SystemCallFailure("fstat", errno))
        }
        let status = FileStatus(info)
        guard status.isRegularFile else {
            _ = Glibc.close(fd)
            throw .systemCall(SystemCallFailure("open", refused: notRegularFile))
        }
        return ImageDescriptor(path: path, fd: fd, status: status)
    }

    /// The stand-in for an image that lies in the shared cache: no file is opened (no
    /// descriptor: -1), nothing is read through it.
    package static func inSharedCache(_ path: String) -> ImageDescriptor {
        ImageDescriptor(path: path, fd: -1, status: FileStatus(size: 0, mode: 0, ownerID: 0))
    }

    private init(path: String, fd: Int32, status: FileStatus) {
        (self.path, self.fd, self.status) = (path, fd, status)
    }

    /// Bytes read per call while hashing: a hash's memory, whatever the file's size.
    package static let hashChunkSize = 1 << 20

    /// Linux `lseek` whences (glibc hides them without `_GNU_SOURCE`): the next byte of data
    /// at or after an offset, and the next hole.
    static let seekData: Int32 = 3
    static let seekHole: Int32 = 4

    /// xxh3-64 of the whole file (its `fstat` size) through one buffer of at most
    /// ``hashChunkSize`` (the file's size when smaller: a 30 KB image does not clear a megabyte),
    /// or nil when it cannot be read (or is now shorter). Holes of a sparse file
    /// (`SEEK_DATA`/`SEEK_HOLE`) are hashed as the zeros they read as, unread, from a buffer of
    /// zeros made for the first hole: a 4 GB sparse image costs no page cache.
    package func contentHash() -> UInt64? {
        guard let state = unsafe XXH3_createState() else { return nil }
        defer { unsafe XXH3_freeState(state) }
        guard unsafe XXH3_64bits_reset(state) == XXH_OK else { return nil }
        let size = status.size
        let chunk = Int(min(UInt64(Self.hashChunkSize), max(size, 1)))
        var buffer = [UInt8](repeating: 0, count: chunk)
        var zeros: [UInt8] = []
        func hashZeros(_ count: UInt64) {
            if count > 0, zeros.isEmpty { zeros = [UInt8](repeating: 0, count: chunk) }
            var left = count
            while left > 0 {
                let step = Int(min(left, UInt64(chunk)))
                unsafe zeros.withUnsafeBytes { _ = unsafe XXH3_64bits_update(state, $0.baseAddress, step) }
                left -= UInt64(step)
            }
        }
        var offset: UInt64 = 0
        while offset < size {
            // Where the next data starts; ENXIO (no data to the end) or a file system without
            // holes (EINVAL) answers the end, or the offset itself.
            var dataStart = size
            switch UnsafeSystemCall.once({ lseek(fd, off_t(offset), Self.seekData) }, failed: { $0 < 0 }) {
            case let .success(start): dataStart = min(UInt64(start), size)
            case .failure(.noSuchAddressOrDevice): dataStart = size
            case .failure: dataStart = offset
            }
            hashZeros(dataStart - offset)
            offset = dataStart
            guard offset < size else { break }
            var dataEnd = size
            if case let .success(hole) = UnsafeSystemCall.once({ lseek(fd, off_t(offset), Self.seekHole) }, failed: { $0 < 0 }), UInt64(hole) > offset {
                dataEnd = min(UInt64(hole), size)
            }
            while offset < dataEnd {
                let want = Int(min(dataEnd - offset, UInt64(chunk)))
                let read = unsafe buffer.withUnsafeMutableBytes { bytes in
                    UnsafeSystemCall.retryingInterrupts({ unsafe pread(fd, bytes.baseAddress, want, off_t(offset)) }, failed: { $0 < 0 })
                }
                guard case let .success(got) = read, got > 0 else { return nil }
                unsafe buffer.withUnsafeBytes { _ = unsafe XXH3_64bits_update(state, $0.baseAddress, got) }
                offset += UInt64(got)
            }
        }
        return unsafe XXH3_64bits_digest(state)
    }

    /// ``contentHash()`` of a file mapped whole as `bytes`, hashed where it lies: the holes of
    /// a sparse file (``ByteView/holes(before:)``) as the zeros they read as, from a buffer of
    /// zeros, their pages untouched.
    package static func contentHash(ofMapped bytes: ByteView) -> UInt64? {
        guard let state = unsafe XXH3_createState() else { return nil }
        defer { unsafe XXH3_freeState(state) }
        guard unsafe XXH3_64bits_reset(state) == XXH_OK else { return nil }
        let holes = bytes.holes(before: bytes.count)
        var zeros: [UInt8] = []
        unsafe bytes.withUnsafeBytes { raw in
            var offset = 0
            for range in holes + [bytes.count..<bytes.count] {
                if range.lowerBound > offset { _ = unsafe XXH3_64bits_update(state, raw.baseAddress! + offset, range.lowerBound - offset) }
                var left = range.count
                if left > 0, zeros.isEmpty { zeros = [UInt8](repeating: 0, count: min(left, hashChunkSize)) }
                while left > 0 {
                    let step = min(left, zeros.count)
                    unsafe zeros.withUnsafeBytes { _ = unsafe XXH3_64bits_update(state, $0.baseAddress, step) }
                    left -= step
                }
                offset = range.upperBound
            }
        }
        return unsafe XXH3_64bits_digest(state)
    }

    /// Reads up to `count` bytes at `offset` (fewer at the end of the file).
    package func read(offset: UInt64, count: Int) -> [UInt8] {
        unsafe [UInt8](unsafeUninitializedCapacity: max(0, count)) { buffer, initialized in
            guard count > 0 else { return initialized = 0 }
            let got = UnsafeSystemCall.retryingInterrupts({ unsafe pread(fd, buffer.baseAddress, count, off_t(offset)) }, failed: { $0 < 0 })
            initialized = (try? got.get()) ?? 0
        }
    }

    /// Asks the kernel to start reading `range` into the page cache (`POSIX_FADV_WILLNEED`)
    /// without waiting: a cold launch's reads then overlap opening and mapping the next
    /// images. Advice only: the part past the end of the file is dropped, a failure ignored.
    package func readAhead(_ range: Range<UInt64>) {
        let end = min(range.upperBound, status.size)
        guard range.lowerBound < end, let offset = off_t(exactly: range.lowerBound), let length = off_t(exactly: end - range.lowerBound) else { return }
        _ = posix_fadvise(fd, offset, length, POSIX_FADV_WILLNEED)
    }

    deinit { if fd >= 0 { _ = Glibc.close(fd) } }
}
