import LaunchPlan
import Subprocess
import SystemPackage

/// The project's one way to start another program (the stub-root toolchain, the bench's tools,
/// `dyld3` or `llvm-objdump` in tests): a thin async layer over swift-subprocess (1.0.2), which
/// watches children through pidfds and reads pipes through epoll, so no pool thread blocks.
/// ``run(_:_:error:)`` runs to the end and collects the output; ``run(_:_:error:while:)`` also
/// runs a closure that may kill the child; ``session(_:_:errorFile:_:)`` talks to it line by line.
/// Exit statuses are shell-style: the exit code, or 128 + the signal number when killed.
package enum ProcessRunner {
    /// Where a child's stderr goes.
    package enum ErrorOutput: Sendable {
        /// Collected into ``Result/error``.
        case captured
        /// Into the same pipe as stdout, in order (`2>&1`): ``Result/output`` holds both.
        case mergedIntoOutput
        /// Into a file, created or truncated (mode 0644); ``Result/error`` is empty.
        case file(String)
    }

    /// A finished child.
    package struct Result: Sendable {
        /// The program and its arguments, space-separated (for messages).
        package let command: String
        package let processIdentifier: Int32
        /// The exit code, or 128 + the signal number when a signal ended it.
        package let status: Int32
        /// Everything it wrote to stdout (UTF-8, invalid bytes replaced).
        package let output: String
        /// Everything it wrote to stderr when ``ErrorOutput/captured``, "" otherwise.
        package let error: String

        package var succeeded: Bool { status == 0 }
    }

    /// A child still running, handed to the closure of ``run(_:_:error:while:)``.
    /// Valid only inside that closure.
    package struct RunningProcess {
        package let processIdentifier: Int32
        fileprivate let sendKill: () -> Void

        /// Sends SIGKILL. A child that has already exited is left alone (no error).
        package func kill() { sendKill() }
    }

    /// Runs `executable` (a path) with `arguments` to its end, no stdin.
    package static func run(
        _ executable: String, _ arguments: [String], error: ErrorOutput = .captured
    ) async throws(CommandFailure) -> Result {
        try await run(executable, arguments, error: error, while: { _ in })
    }

    /// Runs `executable` with `arguments`, no stdin, and `body` alongside it; returns once
    /// both have ended. stdout (and stderr) are collected as by ``run(_:_:error:)``.
    package static func run(
        _ executable: String, _ arguments: [String], error: ErrorOutput = .captured,
        while body: (RunningProcess) async throws -> Void
    ) async throws(CommandFailure) -> Result {
        let command = commandLine(executable, arguments)
        /// Runs the child with stderr going to `stderr`; stdout is collected.
        func collect<Error: ErrorOutputProtocol>(_ stderr: Error) async throws -> ExecutionResult<Void, BytesOutput, Error> {
            try await Subprocess.run(
                .path(FilePath(executable)), arguments: Arguments(arguments), input: .none, output: .bytes(limit: .max), error: stderr
            ) { execution in try await body(running(execution)) }
        }
        func finished<Error: OutputProtocol>(_ result: borrowing ExecutionResult<Void, BytesOutput, Error>, error: String = "") -> Result {
            Result(command: command, processIdentifier: result.processIdentifier.value, status: status(result.terminationStatus),
                   output: text(result.standardOutput), error: error)
        }
        do {
            switch error {
            case .captured:
                let result = try await collect(.bytes(limit: .max))
                return finished(result, error: text(result.standardError))
            case .mergedIntoOutput: return finished(try await collect(.combinedWithOutput))
            case let .file(path): return finished(try await collect(try errorFile(path)))
            }
        } catch let failure as CommandFailure {
            throw failure
        } catch {
            throw CommandFailure(command, cause: error)
        }
    }

    /// An interactive child: its stdin and stdout are pipes, its stderr goes to a file.
    /// Valid only inside the closure of ``session(_:_:errorFile:_:)``.
    package final class Session {
        /// The program and its arguments, space-separated (for messages).
        package let command: String
        /// Where its stderr goes.
        package let errorFile: String
        private let input: StandardInputWriter
        private var lines: SubprocessOutputSequence.StringSequence<UTF8>.AsyncIterator
        private var inputOpen = true

        fileprivate init(command: String, errorFile: String, input: StandardInputWriter,
                         lines: SubprocessOutputSequence.StringSequence<UTF8>.AsyncIterator) {
            self.command = command
            self.errorFile = errorFile
            self.input = input
            self.lines = lines
        }

        /// Sends one line (a newline is added) to the child's stdin.
        package func send(_ line: String) async throws(CommandFailure) {
            do {
                _ = try await input.write(Array((line + "\n").utf8))
            } catch {
                throw CommandFailure("\(command): cannot write to its stdin", cause: error)
            }
        }

        /// Closes the child's stdin (end of input).
        package func closeInput() async throws(CommandFailure) {
            guard inputOpen else { return }
            inputOpen = false
            do {
                try await input.finish()
            } catch {
                throw CommandFailure("\(command): cannot close its stdin", cause: error)
            }
        }

        /// The next line of the child's stdout without its line break; nil at end of output.
        package func readLine() async throws(CommandFailure) -> String? {
            do {
                return try await lines.next()
            } catch {
                throw CommandFailure("\(command): cannot read its stdout", cause: error)
            }
        }
    }

    /// Starts `executable` with `arguments` and runs `body` with its session. When `body`
    /// returns, stdin is closed and the child is waited for; returns `body`'s value and the
    /// child's status.
    package static func session<Value: Sendable>(
        _ executable: String, _ arguments: [String], errorFile: String,
        _ body: (Session) async throws -> Value
    ) async throws -> (value: Value, status: Int32) {
        let command = commandLine(executable, arguments)
        let result: ExecutionResult<Value, SequenceOutput, FileDescriptorOutput>
        do {
            result = try await Subprocess.run(
                .path(FilePath(executable)), arguments: Arguments(arguments),
                input: .inputWriter, output: .sequence, error: try Self.errorFile(errorFile)
            ) { execution in
                let session = Session(command: command, errorFile: errorFile, input: execution.standardInputWriter,
                                      lines: execution.standardOutput.strings(bufferingPolicy: .unbounded).makeAsyncIterator())
                let value = try await body(session)
                try await session.closeInput()
                return value
            }
        } catch let error as SubprocessError {
            throw CommandFailure(command, cause: error)
        }
        return (result.closureResult, status(result.terminationStatus))
    }

    // MARK: - Conversions

    private static func running<I, O, E>(_ execution: Execution<I, O, E>) -> RunningProcess {
        RunningProcess(processIdentifier: execution.processIdentifier.value,
                       sendKill: { try? execution.send(signal: .kill) })
    }

    private static func errorFile(_ path: String) throws(CommandFailure) -> FileDescriptorOutput {
        do {
            let descriptor = try FileDescriptor.open(
                FilePath(path), .writeOnly, options: [.create, .truncate, .closeOnExec],
                permissions: [.ownerReadWrite, .groupRead, .otherRead])
            return .fileDescriptor(descriptor, closeAfterSpawningProcess: true)
        } catch {
            throw CommandFailure("\(path): cannot be opened for a child's stderr", cause: error)
        }
    }

    private static func status(_ termination: TerminationStatus) -> Int32 {
        switch termination {
        case let .exited(code): code
        case let .signaled(signal): 128 + signal
        }
    }

    private static func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    private static func commandLine(_ executable: String, _ arguments: [String]) -> String {
        ([executable] + arguments).joined(separator: " ")
    }
}

extension CommandFailure {
    /// A child that could not be started, or whose pipes failed: what failed (the command
    /// or file and the step) and the error swift-subprocess or the system gave.
    init(_ what: String, cause: any Error) {
        self.init(splitting: "\(what): \(cause)", kind: "error")
    }
}
