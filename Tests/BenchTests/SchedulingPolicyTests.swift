import Foundation
@testable import LaunchBench
import Testing
import TestSupport

/// The bench keeps real-time priority to its own timed launches (`UnsafeSchedulingPolicy`):
/// at normal priority nothing is changed.
@Suite(.bounded) struct SchedulingPolicyTests {
    @Test func normalPriorityIsLeftAsItIs() throws {
        let before = try #require(UnsafeSchedulingPolicy.policy())
        try #require(!before.isRealTime, "the tests run at normal priority")
        #expect(UnsafeSchedulingPolicy.startChildrenAtNormalPriority() == nil)
        #expect(UnsafeSchedulingPolicy.policy() == before)
        #expect(!before.resetsOnFork && before.description == "SCHED_OTHER")
        // Every thread of this process is listed, the main thread (its ID the process ID) included.
        #expect(UnsafeSchedulingPolicy.threads().contains(getpid()))
    }
}
