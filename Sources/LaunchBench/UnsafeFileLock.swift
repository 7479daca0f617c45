#if canImport(Glibc)
import Glibc
import LaunchPlan
#endif

/// An exclusive `flock(2)` on a lock file beside what it guards, held until released:
/// benches (or tests) preparing the same generated app at once take turns.
enum UnsafeFileLock {
    /// Waits for the lock on `path` (created if absent) by trying `flock(LOCK_EX | LOCK_NB)` and
    /// sleeping between tries: the holder may be a task of this process suspended on a child,
    /// and waiters blocked in `flock` could take every thread of the cooperative pool from it.
    /// The descriptor to release, or nil when the file cannot be opened or the task is
    /// cancelled (the caller goes on unlocked). A lock still held after `limit` (a live
    /// holder: the kernel drops a dead process's lock) is an error naming the lock file.
    static func acquire(_ path: String, waitingAtMost limit: Duration = .seconds(1800)) async throws(CommandFailure) -> Int32? {
        let fd = unsafe open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return nil }
        let deadline = ContinuousClock.now + limit
        while true {
            if flock(fd, LOCK_EX | LOCK_NB) == 0 { return fd }
            let failure = errno
            guard failure == EWOULDBLOCK || failure == EINTR else { return fd }
            guard ContinuousClock.now < deadline else {
                _ = close(fd)
                throw .failed("\(path): another process has held this lock for \(limit) (a bench or test generating the app it guards); end it, or wait for it")
            }
            do {
                try await Task.sleep(for: .milliseconds(20))  // between tries
            } catch {
                _ = close(fd)
                return nil
            }
        }
    }

    static func release(_ fd: Int32) {
        _ = flock(fd, LOCK_UN)
        _ = close(fd)
    }
}
