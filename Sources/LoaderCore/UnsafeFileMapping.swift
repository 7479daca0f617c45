#if canImport(Glibc)
import Glibc
#endif
import MachOReader
import LaunchPlan
import LoaderSystem

/// Whole image files mapped read-only (`PROT_READ`, `MAP_PRIVATE`) for the reader, instead
/// of read into memory: the reader touches only the pages it parses, so memory follows what
/// is read, not the file's size (a 4 GB sparse file costs its header page). The mapping is
/// unmapped when the last ``ByteView`` onto it goes away.
///
/// A file truncated by someone else while it is mapped makes a later read past its new end
/// fault (`SIGBUS`). dyld has the same exposure for the images it maps; the loader maps
/// segments from the same files anyway, and the alternative, copying every file, is what
/// this replaces. Files are opened by the loader's own checks first (regular files only).
enum UnsafeFileMapping {
    /// The first `size` bytes of the open file `fd`, mapped read-only; a failure names the
    /// call `call`. The descriptor may be closed afterwards; the mapping stays.
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
