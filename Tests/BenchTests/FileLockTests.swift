import Foundation
import Synchronization
@testable import LaunchBench
import Testing
import TestSupport

/// The lock that serializes the generation of one bench app (`UnsafeFileLock`).
@Suite(.bounded) struct FileLockTests {
    /// Runs `body` with the path of a lock file in a fresh directory (removed after) and the
    /// descriptor holding that lock.
    static func withHeldLock(_ body: (_ path: String, _ holder: Int32) async throws -> Void) async throws {
        let directory = try Scratch.directory("lock")
        defer { Scratch.remove(directory) }
        let path = directory + "/app.lock"
        try await body(path, try #require(try await UnsafeFileLock.acquire(path)))
    }

    /// The holder of the lock is a task suspended on something (as a generator waits for its
    /// child process), and more tasks of this process wait for the lock than the
    /// cooperative pool has threads: every waiter still gets the lock, one at a time, once the
    /// holder resumes and releases it. A waiter blocked in flock(2) would take a pool thread
    /// each, the holder could never resume, and this test would hang (its bound ends it).
    @Test(.bounded(seconds: 120)) func waitersHoldNoThreadWhileTheHolderIsSuspended() async throws {
        try await Self.withHeldLock { path, holder in
            let waiters = 4 * ProcessInfo.processInfo.activeProcessorCount
            let inside = ConcurrentCount()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<waiters {
                    group.addTask {
                        let fd = try #require(try await UnsafeFileLock.acquire(path))
                        #expect(inside.enter() == 1, "two waiters held the lock at once")
                        try await Task.sleep(for: .milliseconds(2))
                        inside.leave()
                        UnsafeFileLock.release(fd)
                    }
                }
                // The holder suspends (it needs a pool thread to resume), then releases.
                try await Task.sleep(for: .milliseconds(200))
                #expect(inside.entered == 0, "a waiter got the lock while it was held")
                UnsafeFileLock.release(holder)
                try await group.waitForAll()
            }
            #expect(inside.entered == waiters)
        }
    }

    /// A lock another holder keeps past the waiter's limit is an error naming the lock file;
    /// once released, it is taken at once.
    @Test(.bounded(seconds: 120)) func aLockHeldPastTheLimitIsAnErrorNamingIt() async throws {
        try await Self.withHeldLock { path, holder in
            await #expect {
                _ = try await UnsafeFileLock.acquire(path, waitingAtMost: .milliseconds(200))
            } throws: { error in
                "\(error)".hasPrefix("\(path): another process has held this lock for ")
            }
            UnsafeFileLock.release(holder)
            let taken = try #require(try await UnsafeFileLock.acquire(path, waitingAtMost: .milliseconds(200)))
            UnsafeFileLock.release(taken)
        }
    }
}

/// How many tasks are inside the lock now, and how many entered it in all.
private final class ConcurrentCount: Sendable {
    private let state = Mutex<(now: Int, total: Int)>((0, 0))
    func enter() -> Int { state.withLock { $0.now += 1; $0.total += 1; return $0.now } }
    func leave() { state.withLock { $0.now -= 1 } }
    var entered: Int { state.withLock { $0.total } }
}
