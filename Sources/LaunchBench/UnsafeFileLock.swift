#if canImport(Glibc)
import Glibc
#endif

/// An exclusive `flock(2)` on a lock file beside what it guards, held until released:
/// benches (or tests) preparing the same generated app at once take turns.
enum UnsafeFileLock {
    /// Waits for the lock on `path` (created if absent; opened with open(2), not through a
    /// rename, so every taker locks the same file); the descriptor to release, or nil when
    /// the file cannot be opened (the caller goes on unlocked).
    static func acquire(_ path: String) -> Int32? {
        let fd = unsafe open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return nil }
        while flock(fd, LOCK_EX) != 0 && errno == EINTR {}
        return fd
    }

    static func release(_ fd: Int32) {
        _ = flock(fd, LOCK_UN)
        _ = close(fd)
    }
}
