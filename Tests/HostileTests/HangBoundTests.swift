import Foundation
import ProcessRunner
import Testing
import TestSupport

/// The bound every suite carries (``HangBound``): a test case that never returns ends the
/// test process with a line naming it, instead of holding the run until CI gives up.
@Suite(.bounded) struct HangBoundTests {
    /// The test the next one runs in a child test process: when asked, it blocks its thread
    /// as a launch that never returns would (a plain `sleep`, which no cancellation reaches).
    /// Asked for nothing (every ordinary run), it returns at once.
    @Test func holdsItsThreadWhenAsked() {
        guard let text = ProcessInfo.processInfo.environment["DYLD3_TEST_HOLD_SECONDS"], let seconds = UInt32(text) else { return }
        sleep(seconds)
    }

    /// This test binary, run on ``holdsItsThreadWhenAsked()`` alone with a bound of 2 s and a
    /// hold of 120 s: the child ends by SIGABRT, its stderr names the test and its bound.
    @Test func aTestPastItsBoundEndsTheProcessNamingIt() async throws {
        let binary = try #require(Bundle.main.executablePath, "no path for this test binary")
        let result = try await ProcessRunner.run("/usr/bin/timeout", [
            "-s", "KILL", "300", "/usr/bin/env", "DYLD3_TEST_BOUND_SECONDS=2", "DYLD3_TEST_HOLD_SECONDS=120", "SWIFT_BACKTRACE=enable=no",
            binary, "--testing-library", "swift-testing", "--filter", "HangBoundTests/holdsItsThreadWhenAsked",
        ], error: .captured)
        #expect(result.status == 128 + SIGABRT, "status \(result.status); stderr: \(result.error.suffix(2000))")
        let line = try #require(result.error.split(separator: "\n").first { $0.hasPrefix("hang: ") }, "stderr: \(result.error.suffix(2000))")
        #expect(line == "hang: test holdsItsThreadWhenAsked() (HostileTests/HangBoundTests.swift:12) is still running after its bound of 2 s; ending the test process")
        let running = try #require(result.error.split(separator: "\n").first { $0.hasPrefix("hang: running then: ") }, "stderr: \(result.error.suffix(2000))")
        #expect(running.hasPrefix("hang: running then: holdsItsThreadWhenAsked() (HostileTests/HangBoundTests.swift:12) "), "\(running)")
    }

    /// The armed test cases the watchdog would end: none before its deadline, this one after.
    @Test func theWatchdogFindsOnlyWhatIsPastItsDeadline() {
        let watchdog = HangWatchdog.shared
        let token = watchdog.arm("probe", seconds: 300)
        defer { watchdog.disarm(token) }
        #expect(!watchdog.overdue().contains { $0.label == "probe" })
        #expect(watchdog.running(at: .now + .seconds(42)).contains { $0.label == "probe" && $0.seconds >= 42 })
        #expect(watchdog.overdue(at: .now + .seconds(301)).contains { $0.label == "probe" && $0.seconds == 300 })
        watchdog.disarm(token)
        #expect(!watchdog.overdue(at: .now + .seconds(301)).contains { $0.label == "probe" })
    }

    /// The fixed slides the suites launch at are each their own: suites run at once, and two
    /// launches at one address collide (the second cannot reserve it, and a suite that checks
    /// nothing is left in its region would see the other's).
    @Test func suitesFixedSlidesAreTheirOwn() throws {
        let tests = Paths.repoRoot.appendingPathComponent("Tests")
        let files = try #require(FileManager.default.enumerator(atPath: tests.path)).compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") }
        var owners: [String: [String]] = [:]
        for file in files {
            let text = try String(contentsOfFile: tests.appendingPathComponent(file).path, encoding: .utf8)
            for line in text.split(separator: "\n") where line.contains("let slide: UInt64 = 0x") {
                let value = line.split(separator: "=").last.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
                owners[value, default: []].append(file)
            }
        }
        #expect(owners.count >= 4)
        for (slide, files) in owners { #expect(files.count == 1, "slide \(slide) is fixed by \(files)") }
    }

    /// Every suite under Tests/ carries the bound (a suite without it could hang the run).
    @Test func everySuiteIsBounded() throws {
        let tests = Paths.repoRoot.appendingPathComponent("Tests")
        let files = try #require(FileManager.default.enumerator(atPath: tests.path)).compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") }
        var suites = 0
        for file in files {
            let text = try String(contentsOfFile: tests.appendingPathComponent(file).path, encoding: .utf8)
            for line in text.split(separator: "\n") where line.trimmingCharacters(in: .whitespaces).hasPrefix("@Suite") {
                suites += 1
                #expect(line.contains(".bounded"), "\(file): \(line)")
            }
        }
        #expect(suites > 70)
    }
}
