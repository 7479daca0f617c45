#if canImport(Glibc)
import Glibc
#endif

/// `rename(2)`: replaces `destination` with `source` atomically (the fixture tools are built
/// to a temporary name and renamed into place, so tests running at once never see half a file).
package func renameReplacing(_ source: String, _ destination: String) -> Bool {
    unsafe rename(source, destination) == 0
}
