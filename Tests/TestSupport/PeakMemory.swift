import Foundation
import ProcessRunner

/// A child's own peak resident memory, for resource bounds in tests.
///
/// `ru_maxrss` of a process spawned straight from the test process is worthless: a child
/// started with `vfork` semantics (posix_spawn, swift-subprocess) keeps its spawner's peak
/// across `exec`. So the program runs under `tools/glibc-harness.c --rss`, a small C
/// process that forks it, reaps it with `wait4` and prints its `ru_maxrss`; its stdout goes
/// to `/dev/null` through `sh`, so a program printing gigabytes costs the test nothing.
package enum PeakMemory {
    /// A finished child: its status, what it wrote to stderr and its peak RSS in bytes.
    package struct Result: Sendable {
        package let status: Int32
        package let stderr: String
        package let peakResidentBytes: Int
    }

    /// The harness, compiled with the system `cc` into `build/test-tools/` (atomically: tests
    /// run in parallel).
    static func harness() async throws -> String {
        let tools = Paths.repoRoot.appendingPathComponent("build/test-tools")
        try FileManager.default.createDirectory(at: tools, withIntermediateDirectories: true)
        let executable = tools.appendingPathComponent("glibc-harness").path
        let source = Paths.repoRoot.appendingPathComponent("tools/glibc-harness.c").path
        let fresh = { () -> Bool in
            guard let built = try? FileManager.default.attributesOfItem(atPath: executable)[.modificationDate] as? Date,
                  let written = try? FileManager.default.attributesOfItem(atPath: source)[.modificationDate] as? Date else { return false }
            return built >= written
        }
        if fresh() { return executable }
        let temporary = executable + ".\(UUID().uuidString)"
        let compile = try await ProcessRunner.run("/usr/bin/cc", ["-O2", "-o", temporary, source, "-ldl"])
        guard compile.succeeded else { throw FixtureError("cc \(source): \(compile.error)") }
        guard renameReplacing(temporary, executable) else { throw FixtureError("cannot rename \(temporary)") }
        return executable
    }

    /// Runs `executable arguments` with stdout discarded.
    package static func run(_ executable: String, _ arguments: [String]) async throws -> Result {
        let harness = try await harness()
        let result = try await ProcessRunner.run(
            harness, ["--rss", "/bin/sh", "-c", "exec \"$0\" \"$@\" > /dev/null", executable] + arguments, error: .captured)
        guard let line = result.output.split(separator: "\n").last(where: { $0.hasPrefix("maxrss_kb ") }),
              let kilobytes = Int(line.dropFirst("maxrss_kb ".count)) else {
            throw FixtureError("\(harness) --rss \(executable): no maxrss_kb line in \(result.output.prefix(200))")
        }
        return Result(status: result.status, stderr: result.error, peakResidentBytes: kilobytes * 1024)
    }
}
