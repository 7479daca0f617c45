import Foundation
import ProcessRunner
import TestSupport
import Testing

/// Page-in's fault path in a storm: the fill runs in a SIGBUS handler on whichever thread
/// touched the page, many threads at once, each preempted anywhere. Fixtures/crash-threads
/// built with `-DROUNDS=16` and signed: 16 threads (made by a raw clone(2), so they share
/// main's thread pointer: its errno, its malloc cache, its exclusivity-checking state) read
/// pointers from 64 pages of fixups, every page hashed against its code slot as it is
/// filled, then main returns 0. Launched again and again under `--fixups page-in
/// --fault-around 1` (every page its own fault: the most fills at once) with a busy loop on
/// the last core, with the Swift runtime's crash handler on: every launch exits 0, and no
/// `swift-backtrace` helper (the crash handler's) is left running. `tools/pagein-storm` runs
/// the same launch 600 times. (A fill that allocated, as the SHA-256 of swift-crypto did,
/// crashed about one launch in twelve here.)
@Suite(.serialized, .bounded) struct PageInStormTests {
    static let launches = 40

    @Test func sixteenThreadsFillingSignedPagesBesideABusyCoreNeverCrash() async throws {
        let app = try await PageInCrashTests.buildCrashApp(defines: ["-DROUNDS=16"], signed: true)
        defer { try? FileManager.default.removeItem(at: app.directory) }
        let errorPath = app.directory.appendingPathComponent("stderr").path
        let launch = ["-s", "KILL", "\(Dyld3Binary.minimumLimitSeconds)", "/usr/bin/env"] + PageInCrashTests.crashHandler + [
            try Dyld3Binary.path(), "launch", "--mode", "dyld3", "--fixups", "page-in", "--fault-around", "1", "--cache", app.cache, "--root", app.root, app.app,
        ]
        var crashes: [String] = []
        var helpersLeft: [Int32] = []
        let lastCore = "\(max(ProcessInfo.processInfo.activeProcessorCount - 1, 0))"
        _ = try await ProcessRunner.run("/usr/bin/taskset", ["-c", lastCore, "/bin/sh", "-c", "while :; do :; done"]) { busy in
            defer { busy.kill() }
            for attempt in 1...Self.launches {
                // Standard error into a file: a helper left behind would hold a pipe open for good.
                let result = try await ProcessRunner.run("/usr/bin/timeout", launch, error: .file(errorPath))
                let stderr = (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? ""
                if result.status != 0 || stderr.contains("page-in:") {
                    crashes.append("#\(attempt): status \(result.status)\(result.status == 137 ? " (killed at its time limit: it hung)" : ""): \(stderr.suffix(600))")
                }
                // The crash handler waits for its helper: once the launch has ended, none may run.
                let left = Self.backtraceHelpers(writingTo: errorPath)
                for pid in left { kill(pid, SIGKILL) }
                helpersLeft += left
            }
        }
        #expect(crashes.isEmpty, "\(crashes.count)/\(Self.launches) launches did not exit 0:\n\(crashes.prefix(3).joined(separator: "\n"))")
        #expect(helpersLeft.isEmpty, "swift-backtrace helpers left running: \(helpersLeft)")
    }

    /// The running `swift-backtrace` processes whose standard error is `path`: helpers the
    /// crash handler started in a launch, which inherit the launch's standard error.
    static func backtraceHelpers(writingTo path: String) -> [Int32] {
        let processes = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return processes.compactMap { entry in
            guard let pid = Int32(entry),
                  let name = try? String(contentsOfFile: "/proc/\(entry)/comm", encoding: .utf8), name.hasPrefix("swift-backtrac"),
                  (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(entry)/fd/2")) == path else { return nil }
            return pid
        }
    }
}
