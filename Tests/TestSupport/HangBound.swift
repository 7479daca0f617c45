import Foundation
import Synchronization
import Testing

/// A bound on how long each test case may run: one that is still running after
/// ``HangBound/seconds`` ends the test process with one line naming it, so a hang fails
/// the run at once instead of holding it until CI gives up.
///
/// Swift Testing's own `.timeLimit` cannot do this: it cancels the test's task, and a test
/// blocked in synchronous code (a launch that never returns) never sees the cancellation,
/// while it holds one of the few threads every other test needs. Every suite carries
/// `.bounded` (a test checks that). The process ends by `abort`, so the Swift runtime's
/// backtracer prints every thread's stack: where the hang is.
package struct HangBound: SuiteTrait, TestTrait, TestScoping {
    /// The bound: `DYLD3_TEST_BOUND_SECONDS`, else 10 minutes (the slowest test case takes
    /// about 3 minutes alone on 2 cores, and 9 with two more test processes beside it).
    package static let seconds: Int = {
        if let text = ProcessInfo.processInfo.environment["DYLD3_TEST_BOUND_SECONDS"], let value = Int(text), value > 0 { return value }
        return 600
    }()

    /// This trait's bound (``seconds`` unless a test asks for a tighter one).
    package let limit: Int

    package var isRecursive: Bool { true }

    package func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        guard !test.isSuite else { return try await function() }
        let location = test.sourceLocation
        let token = HangWatchdog.shared.arm("\(test.name) (\(location.fileID):\(location.line))", seconds: limit)
        defer { HangWatchdog.shared.disarm(token) }
        try await function()
    }
}

extension Trait where Self == HangBound {
    /// Each test case of the suite (or the test) ends the test process if it runs longer
    /// than ``HangBound/seconds``.
    package static var bounded: HangBound { HangBound(limit: HangBound.seconds) }

    /// A tighter bound, for a test whose point is that it ends quickly (its suite's bound
    /// applies too).
    package static func bounded(seconds: Int) -> HangBound { HangBound(limit: min(seconds, HangBound.seconds)) }
}

/// The thread that watches the armed test cases: once a second it looks for one past its
/// deadline, and ends the process (`abort`) after writing which one to standard error, with
/// every test case then running and how long it had run.
package final class HangWatchdog: Sendable {
    package static let shared = HangWatchdog()

    private struct Armed {
        let label: String
        let seconds: Int
        let started: ContinuousClock.Instant
        var deadline: ContinuousClock.Instant { started + .seconds(seconds) }
    }

    private let state = Mutex<(next: Int, armed: [Int: Armed], started: Bool)>((0, [:], false))

    /// Starts watching `label` for `seconds`; the token disarms it.
    package func arm(_ label: String, seconds: Int) -> Int {
        let (token, start) = state.withLock { state -> (Int, Bool) in
            let token = state.next
            state.next += 1
            state.armed[token] = Armed(label: label, seconds: seconds, started: .now)
            defer { state.started = true }
            return (token, !state.started)
        }
        if start {
            let thread = Thread { [self] in watch() }
            thread.name = "hang watchdog"
            thread.start()
        }
        return token
    }

    package func disarm(_ token: Int) {
        _ = state.withLock { $0.armed.removeValue(forKey: token) }
    }

    /// The armed labels past their deadline at `now`, oldest first.
    package func overdue(at now: ContinuousClock.Instant = .now) -> [(label: String, seconds: Int)] {
        state.withLock { state in
            state.armed.values.filter { $0.deadline <= now }.sorted { $0.deadline < $1.deadline }.map { ($0.label, $0.seconds) }
        }
    }

    /// Every armed label with the whole seconds it has run at `now`, longest first (once each).
    package func running(at now: ContinuousClock.Instant = .now) -> [(label: String, seconds: Int64)] {
        var named = Set<String>()
        return state.withLock { state in
            state.armed.values.sorted { $0.started < $1.started }.filter { named.insert($0.label).inserted }
                .map { ($0.label, (now - $0.started).components.seconds) }
        }
    }

    private func watch() {
        while true {
            Thread.sleep(forTimeInterval: 1)
            let late = overdue()
            guard !late.isEmpty else { continue }
            // A test under its suite's bound and its own is armed twice: one line each.
            var named = Set<String>()
            let lines = late.filter { named.insert($0.label).inserted }
                .map { "hang: test \($0.label) is still running after its bound of \($0.seconds) s; ending the test process" }
            // The test that holds things up may have started later than the one it keeps
            // waiting (a test blocked on a thread, another waiting for one): every test then running.
            let others = running().map { "\($0.label) \($0.seconds) s" }
            FileHandle.standardError.write(Data((lines.joined(separator: "\n") + "\nhang: running then: " + others.joined(separator: ", ") + "\n").utf8))
            abort()
        }
    }
}
