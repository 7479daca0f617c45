#if canImport(Glibc)
import Glibc
#endif

/// `realpath(3)`: one libc call (one `lstat` per component; no URL parsing or component strings).
package enum RealPath {
    /// The canonical path of the existing `path`, or nil when some component is missing or unsearchable.
    package static func of(_ path: String) -> String? {
        guard let resolved = unsafe realpath(path, nil) else { return nil }
        defer { unsafe free(resolved) }
        return unsafe String(cString: resolved)
    }
}
