import Foundation
import LaunchPlan
@testable import LaunchBench
import ProcessRunner
import Testing
import TestSupport

/// How `--cold` empties the page cache: the choice of method, and that `posix_fadvise`
/// eviction really leaves none of a file's pages resident (counted with mincore).
@Suite(.bounded) struct EvictionTests {
    @Test func methodChoice() throws {
        #expect(try EvictionMethod.choose(requested: nil, dropCachesWritable: true) == .dropCaches)
        #expect(try EvictionMethod.choose(requested: nil, dropCachesWritable: false) == .fadvise)
        #expect(try EvictionMethod.choose(requested: .fadvise, dropCachesWritable: true) == .fadvise)
        #expect(try EvictionMethod.choose(requested: .dropCaches, dropCachesWritable: true) == .dropCaches)
        #expect(throws: CommandFailure.self) { try EvictionMethod.choose(requested: .dropCaches, dropCachesWritable: false) }
    }

    @Test func fadviseEvictsEveryPageOfTheFile() async throws {
        // On the repository's file system (not a tmpfs, where pages cannot be evicted);
        // written and synced by dd, so every page is clean.
        let directory = BenchTests.repository + "/build/bench-tools"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let file = directory + "/eviction-test-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: file) }
        let written = try await ProcessRunner.run(
            "/usr/bin/dd", ["if=/dev/urandom", "of=" + file, "bs=65536", "count=8", "conv=fsync"], error: .captured)
        #expect(written.succeeded, "\(written.error)")
        _ = FileManager.default.contents(atPath: file)  // read: every page in the cache

        let before = try PageCache.residentPages([file])
        #expect(before.total == 512 * 1024 / ProcessMemory.pageSize)
        #expect(before.resident == before.total, "\(before)")
        try PageCache.evict([file], method: .fadvise)
        let after = try PageCache.residentPages([file])
        #expect(after.total == before.total && after.resident == 0, "\(after)")
    }
}
