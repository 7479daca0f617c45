#if canImport(Glibc)
import Glibc
#endif

/// The bench's only system calls on the page cache: write a /proc/sys file, advise the
/// kernel to drop a file's pages, count a file's resident pages. ``PageCache`` is the safe side.
enum UnsafePageCache {
    static func isWritable(_ path: String) -> Bool { unsafe access(path, W_OK) == 0 }

    /// Writes `text` to `path` (no O_CREAT); the errno on failure, nil on success.
    static func write(_ text: String, to path: String) -> Int32? {
        let descriptor = unsafe open(path, O_WRONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return errno }
        defer { close(descriptor) }
        let bytes = Array(text.utf8)
        let written = unsafe bytes.withUnsafeBytes { unsafe Glibc.write(descriptor, $0.baseAddress, $0.count) }
        return written == bytes.count ? nil : (written < 0 ? errno : EIO)
    }

    /// `posix_fadvise(POSIX_FADV_DONTNEED)` over the whole file; the error on failure.
    static func adviseDontNeed(_ path: String) -> Int32? {
        let descriptor = unsafe open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return errno }
        defer { close(descriptor) }
        let result = posix_fadvise(descriptor, 0, 0, POSIX_FADV_DONTNEED)
        return result == 0 ? nil : result
    }

    /// The file's pages in the page cache and its size in pages (mincore over a read-only
    /// shared mapping, which faults nothing in); nil if it cannot be opened or mapped.
    static func residentPages(_ path: String) -> (resident: Int, total: Int)? {
        let descriptor = unsafe open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var status = stat()
        guard unsafe fstat(descriptor, &status) == 0 else { return nil }
        let size = Int(status.st_size)
        let page = ProcessMemory.pageSize
        let total = (size + page - 1) / page
        guard total > 0 else { return (0, 0) }
        guard let mapping = unsafe mmap(nil, size, PROT_READ, MAP_SHARED, descriptor, 0), unsafe mapping != MAP_FAILED else { return nil }
        defer { unsafe munmap(mapping, size) }
        var vector = [UInt8](repeating: 0, count: total)
        guard unsafe vector.withUnsafeMutableBufferPointer({ unsafe mincore(mapping, size, $0.baseAddress) }) == 0 else { return nil }
        return (vector.reduce(0) { $0 + Int($1 & 1) }, total)
    }
}
