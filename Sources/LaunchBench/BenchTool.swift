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

    /// Of a `dyld3 launch --json` report: its in-process total, `main`'s time (0 when it did
    /// not run) and whether it ran; nil when `json` is not such a report.
    static func launchTimings(_ json: Substring) -> (total: Int64, main: Int64, ran: Bool)? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any],
              let timings = object["timings_ns"] as? [String: Any], let total = (timings["total"] as? NSNumber)?.int64Value else { return nil }
        return (total, (timings["main"] as? NSNumber)?.int64Value ?? 0, object["ran"] as? Bool == true)
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
