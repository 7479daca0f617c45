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
    static func map(_ fd: Int32, size: Int, call: String) -> Result<ByteStorage, LoadError> {
        guard size > 0 else { return .success(ByteStorage([])) }
        return unsafe UnsafeSystemCall.mapping { unsafe mmap(nil, size, PROT_READ, MAP_PRIVATE, fd, 0) }
            .failing(call, namesCall: true)
            .map { address in
                unsafe ByteStorage(unsafeStart: UnsafeRawPointer(address), count: size) { start, count in
                    _ = unsafe munmap(UnsafeMutableRawPointer(mutating: start), count)
                }
            }
    }
}
