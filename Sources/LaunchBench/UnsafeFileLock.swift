#if canImport(Glibc)
import Glibc
import LaunchPlan
#endif

/// An exclusive `flock(2)` on a lock file beside what it guards, held until released:
/// benches (or tests) preparing the same generated app at once take turns.
enum UnsafeFileLock {
    /// How long a waiter sleeps between tries.
    static let retryMilliseconds = 20

    /// Waits for the lock on `path` (created if absent; opened with open(2), not through a
    /// rename, so every taker locks the same file) without holding a thread: it tries
    /// `flock(LOCK_EX | LOCK_NB)` and, while someone else holds the lock, sleeps between
    /// tries. Another holder may be another task of this process (each open has its own
    /// lock), suspended on a child process it waits for: a waiter blocked in `flock` would
    /// hold one of the cooperative pool's few threads, and with as many waiters as threads
    /// the holder could never resume. The descriptor to release, or nil when the file cannot
    /// be opened or the task is cancelled while it waits (the caller goes on unlocked). A
    /// lock still held after `limit` (a live holder: the kernel drops the lock of a process
    /// that ends) is an error naming the lock file.
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
                try await Task.sleep(for: .milliseconds(retryMilliseconds))
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
