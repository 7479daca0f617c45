#if canImport(Glibc)
import Glibc
#endif

/// `realpath(3)`: a path made absolute, `.` and `..` removed, every symlink resolved,
/// in one libc call (one `lstat` per component; no URL parsing or path-component strings).
package enum RealPath {
    /// The canonical path of the existing file or directory `path`, or nil when some
    /// component does not exist or cannot be searched.
    package static func of(_ path: String) -> String? {
        guard let resolved = unsafe realpath(path, nil) else { return nil }
        defer { unsafe free(resolved) }
        return unsafe String(cString: resolved)
    }
}
