#if canImport(Glibc)
import Glibc
#endif
import MachOReader
import LaunchPlan
import LoaderSystem

/// Whole image files mapped read-only for the reader, not read: memory follows what is parsed,
/// not the file's size (a 4 GB sparse file costs its header page). Unmapped when the last
/// ``ByteView`` onto it goes away.
///
/// A file truncated by someone else while mapped makes a later read past its new end fault
/// (`SIGBUS`), the exposure dyld has for the images it maps; copying every file is the alternative.
enum UnsafeFileMapping {
    /// The first `size` bytes of `fd`, mapped read-only (the descriptor may then be closed).
    /// For a sparse file the storage keeps a duplicate of the descriptor to answer where its
    /// holes are (`SEEK_HOLE`), so that a signature check never reads gigabytes never written.
    static func map(_ fd: Int32, size: Int, call: String) -> Result<ByteStorage, LoadError> {
        guard size > 0 else { return .success(ByteStorage([])) }
        let mapped = unsafe UnsafeSystemCall.mapping { unsafe mmap(nil, size, PROT_READ, MAP_PRIVATE, fd, 0) }.failing(call, namesCall: true)
        let address: UnsafeMutableRawPointer
        switch unsafe mapped {
        case let .success(mapping): unsafe address = unsafe mapping
        case let .failure(error): return .failure(error)
        }
        // A file with no hole (the usual case: SEEK_HOLE answers its end) needs no probe: only a
        // sparse file keeps a duplicate descriptor for the questions asked later.
        let sparse = seek(fd, 0, data: false) < size
        let probe = sparse ? fcntl(fd, F_DUPFD_CLOEXEC, Int32(0)) : -1
        let holes: (@Sendable (Int, Bool) -> Int)? = probe < 0 ? nil : { @Sendable offset, data in seek(probe, offset, data: data) }
        let release: @Sendable (UnsafeRawPointer, Int) -> Void = { start, count in
            _ = unsafe munmap(UnsafeMutableRawPointer(mutating: start), count)
            if probe >= 0 { close(probe) }
        }
        return .success(unsafe ByteStorage(unsafeStart: UnsafeRawPointer(address), count: size, holes: holes, release: release))
    }

    /// Where the next hole (or with `data`, the next data) of `fd`'s file starts at or after
    /// `offset`. A file system without holes answers the end; a failure (ENXIO: no data up to
    /// the end) answers past every offset.
    private static func seek(_ fd: Int32, _ offset: Int, data: Bool) -> Int {
        let found = lseek(fd, off_t(offset), data ? seekData : seekHole)
        return found < 0 ? Int.max : Int(found)
    }

    /// Linux's `SEEK_DATA` and `SEEK_HOLE` (glibc hides them without `_GNU_SOURCE`).
    static let seekData: Int32 = 3
    static let seekHole: Int32 = 4
}
