import Foundation

/// glibc's loader, driven through `tools/glibc-harness.c` (compiled here with the system
/// `cc`): a harness process that `dlopen`s the ELF twin on command and reports the time.
struct GlibcHarness {
    let executable: String

    /// Compiles the harness into `workDirectory/bench-tools/` (every bench run: it takes ms).
    static func build(configuration: BenchConfiguration) throws(BenchError) -> GlibcHarness {
        let tools = configuration.workDirectory + "/bench-tools"
        try? FileManager.default.createDirectory(atPath: tools, withIntermediateDirectories: true)
        let source = configuration.repositoryRoot + "/tools/glibc-harness.c"
        let executable = tools + "/glibc-harness"
        _ = try Subprocess.run(["/usr/bin/cc", "-O2", "-o", executable, source], stderrPath: tools + "/cc.stderr")
        return GlibcHarness(executable: executable)
    }

    /// A running harness for one app: each ``load()`` is one timed dlopen + dlclose.
    final class Session {
        let process: Subprocess

        init(_ harness: GlibcHarness, app: BenchApp, stderrPath: String) throws(BenchError) {
            process = try Subprocess([harness.executable, app.elfLoadRoot, app.elfDirectory + "/"], stderrPath: stderrPath)
        }

        /// Nanoseconds of one `dlopen(RTLD_NOW)`.
        func load() throws(BenchError) -> Int64 {
            try process.send("load")
            return try Int64(value(of: "ns"))
        }

        /// Pages privately dirty in the twin's file mappings while it is loaded.
        func dirtyPages() throws(BenchError) -> Int {
            try process.send("dirty")
            return try Int(value(of: "dirty_kb")) * 1024 / ProcessMemory.pageSize
        }

        /// Ends the session; returns the harness's peak RSS in kB.
        func finish() throws(BenchError) -> Int {
            process.closeInput()
            let rss = try value(of: "maxrss_kb")
            let status = try process.wait()
            guard status == 0 else { throw .failed("glibc harness exited with \(status): \(process.stderrText)") }
            return Int(rss)
        }

        private func value(of key: String) throws(BenchError) -> Int64 {
            guard let line = process.readLine() else {
                throw .failed("glibc harness ended early: \(process.stderrText)")
            }
            let fields = line.split(separator: " ", maxSplits: 1)
            guard fields.count == 2, fields[0] == key, let value = Int64(fields[1]) else {
                throw .failed("glibc harness: \(line)")
            }
            return value
        }
    }
}
