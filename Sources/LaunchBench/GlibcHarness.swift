import Foundation
import LaunchPlan
import ProcessRunner

/// glibc's loader, driven through `tools/glibc-harness.c` (compiled here with the system
/// `cc`): a harness process that `dlopen`s the ELF twin on command and reports the time.
struct GlibcHarness {
    let executable: String

    /// Compiles the harness into `workDirectory/bench-tools/` (every bench run: it takes ms).
    static func build(configuration: BenchConfiguration) async throws(CommandFailure) -> GlibcHarness {
        let tools = configuration.workDirectory + "/bench-tools"
        try? FileManager.default.createDirectory(atPath: tools, withIntermediateDirectories: true)
        let source = configuration.repositoryRoot + "/tools/glibc-harness.c"
        let executable = tools + "/glibc-harness"
        _ = try await BenchTool.run(["/usr/bin/cc", "-O2", "-o", executable, source], stderrPath: tools + "/cc.stderr")
        return GlibcHarness(executable: executable)
    }

    /// Starts a harness for one layout of `app`'s twin, runs `body` with it, then ends it (end of input) and
    /// waits for it. Returns what `body` returned and the harness's peak RSS in kB.
    func withSession<Value: Sendable>(
        app: BenchApp, layout: ELFLayout, stderrPath: String, _ body: (Session) async throws -> Value
    ) async throws -> (value: Value, maxRSSKilobytes: Int) {
        let (result, status) = try await ProcessRunner.session(
            executable, [app.elfLoadRoot(layout), app.elfPrefix(layout)], errorFile: stderrPath
        ) { process in
            let session = Session(process: process)
            let value = try await body(session)
            return (value, try await session.finish())
        }
        guard status == 0 else { throw CommandFailure.failed("glibc harness exited with \(status): \(BenchTool.stderrText(stderrPath))") }
        return (result.0, result.1)
    }

    /// A running harness for one app: each ``load()`` is one timed dlopen + dlclose.
    struct Session {
        fileprivate let process: ProcessRunner.Session

        /// Nanoseconds of one `dlopen(RTLD_NOW)`.
        func load() async throws(CommandFailure) -> Int64 {
            try await send("load")
            return try await Int64(value(of: "ns"))
        }

        /// Pages privately dirty in the twin's file mappings while it is loaded.
        func dirtyPages() async throws(CommandFailure) -> Int {
            try await send("dirty")
            return try await Int(value(of: "dirty_kb")) * 1024 / ProcessMemory.pageSize
        }

        /// Ends the input; returns the harness's peak RSS in kB, its last line.
        fileprivate func finish() async throws(CommandFailure) -> Int {
            try await talking { () async throws(CommandFailure) in try await process.closeInput() }
            return Int(try await value(of: "maxrss_kb"))
        }

        private func send(_ line: String) async throws(CommandFailure) {
            try await talking { () async throws(CommandFailure) in try await process.send(line) }
        }

        /// `body`'s result; a failure of the pipes is the harness's.
        private func talking<T>(_ body: () async throws(CommandFailure) -> T) async throws(CommandFailure) -> T {
            do { return try await body() } catch { throw .process("glibc harness", error) }
        }

        private func value(of key: String) async throws(CommandFailure) -> Int64 {
            guard let line = try await talking({ () async throws(CommandFailure) in try await process.readLine() }) else {
                throw .failed("glibc harness ended early: \(BenchTool.stderrText(process.errorFile))")
            }
            let fields = line.split(separator: " ", maxSplits: 1)
            guard fields.count == 2, fields[0] == key, let value = Int64(fields[1]) else { throw .failed("glibc harness: \(line)") }
            return value
        }
    }
}
