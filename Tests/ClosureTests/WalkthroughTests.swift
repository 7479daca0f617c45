import TestSupport
import Foundation
import Testing

extension ClosureTests {
    /// README's "Your first five minutes" block, as written there.
    static func firstFiveMinutes() throws -> [String] {
        let readme = try String(contentsOf: Paths.repoRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let marker = try #require(readme.range(of: "<!-- first-five-minutes:"), "README has no first-five-minutes block")
        let rest = readme[marker.upperBound...]
        let open = try #require(rest.range(of: "```sh\n"))
        let close = try #require(rest[open.upperBound...].range(of: "```"))
        return rest[open.upperBound..<close.lowerBound].split(separator: "\n").map(String.init)
    }

    /// Every line of README's walkthrough, run in order from the repository root under
    /// `set -e`, succeeds; the signed launch at its end runs main. The one change: the
    /// `dyld3` put first on PATH is the build under test (`.build/release` becomes its
    /// directory), and the default cache is a scratch one (`DYLD3_CACHE`).
    @Test func readmeFirstFiveMinutesRuns() async throws {
        let lines = try Self.firstFiveMinutes()
        #expect(lines.count >= 10 && lines[0].hasPrefix("export PATH=\"$PWD/.build/release:"), "\(lines)")
        let binary = try Dyld3Binary.path()
        let directory = (binary as NSString).deletingLastPathComponent
        let cache = try Scratch.directory("walkthrough")
        defer { Scratch.remove(cache) }
        let script = ["set -e", "cd '\(Paths.repoRoot.path)'", "export DYLD3_CACHE='\(cache)'"]
            + lines.map { $0.replacingOccurrences(of: "$PWD/.build/release", with: directory) }
        let result = try Self.runShell(script.joined(separator: "\n"), limitSeconds: 300)
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        let output = result.stdout.split(separator: "\n").map(String.init)
        #expect(output.last?.hasPrefix("main returned ") == true, "\(result.stdout)")
        #expect(output.contains { $0.contains(": identical: ") }, "compare: \(result.stdout)")
        #expect(output.contains("verify: 1 closures, 1 valid, 0 corrupt, 0 stale"), "\(result.stdout)")
    }

    /// `bash -c script`, killed after `limitSeconds`: its status, stdout and stderr.
    static func runShell(_ script: String, limitSeconds: Int) throws -> (status: Int32, stdout: String, stderr: String) {
        let errorPath = FileManager.default.temporaryDirectory.appendingPathComponent("dyld3-walkthrough-\(UUID().uuidString).err").path
        _ = FileManager.default.createFile(atPath: errorPath, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: errorPath) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
        process.arguments = ["-s", "KILL", "\(limitSeconds)", "/bin/bash", "-c", script]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errorPath))
        try process.run()
        let output = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let stderr = (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? ""
        return (process.terminationStatus, String(decoding: output, as: UTF8.self), stderr)
    }
}
