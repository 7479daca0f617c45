import Foundation
import LaunchPlan
import ProcessRunner

/// The programs the bench runs to completion (`cc`, `tools/gen-app`), through
/// ``ProcessRunner``: stderr into a file, quoted in the error when the program fails.
enum BenchTool {
    /// Runs `arguments` (a path, then its arguments) to completion; returns its stdout
    /// without the final line break, or throws with its stderr.
    static func run(_ arguments: [String], stderrPath: String) async throws(CommandFailure) -> String {
        let result = try await start(arguments, stderrPath: stderrPath)
        guard result.succeeded else { throw failure(result, stderrPath: stderrPath) }
        return withoutFinalLineBreak(result.output)
    }

    /// A child that did not do its part: its command, status and stderr.
    static func failure(_ result: ProcessRunner.Result, stderrPath: String) -> CommandFailure {
        .failed("\(result.command) exited with \(result.status): \(stderrText(stderrPath))")
    }

    /// Runs `arguments` to completion; its status and stdout, whatever the status.
    static func start(_ arguments: [String], stderrPath: String) async throws(CommandFailure) -> ProcessRunner.Result {
        do {
            return try await ProcessRunner.run(arguments[0], Array(arguments.dropFirst()), error: .file(stderrPath))
        } catch {
            throw .process("cannot run \(arguments[0])", error)
        }
    }

    /// A child's stderr so far (for error messages).
    static func stderrText(_ path: String) -> String {
        (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
    }

    static func withoutFinalLineBreak(_ text: String) -> String {
        text.hasSuffix("\n") ? String(text.dropLast()) : text
    }
}
