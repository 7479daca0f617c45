import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A child process started with `posix_spawn`: its stdin and stdout are pipes, its stderr
/// goes to a file, and ``wait()`` reaps it. (Its ru_maxrss would include the spawner's peak:
/// the harness's `--rss` mode measures a child's peak instead.)
final class Subprocess {
    let pid: pid_t
    private var input: Int32
    private var output: Int32
    private var buffer: [UInt8] = []
    let stderrPath: String
    let command: String

    init(_ arguments: [String], stderrPath: String) throws(BenchError) {
        command = arguments.joined(separator: " ")
        self.stderrPath = stderrPath
        var stdinPipe: [Int32] = [0, 0], stdoutPipe: [Int32] = [0, 0]
        guard pipe(&stdinPipe) == 0, pipe(&stdoutPipe) == 0 else {
            throw .failed("pipe: \(String(cString: strerror(errno)))")
        }
        // Other children must not inherit these ends (a harness would never see end of input).
        for fd in stdinPipe + stdoutPipe { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, stdinPipe[0], 0)
        posix_spawn_file_actions_adddup2(&actions, stdoutPipe[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var child: pid_t = 0
        let result = posix_spawn(&child, arguments[0], &actions, nil, argv, environ)
        Glibc.close(stdinPipe[0])
        Glibc.close(stdoutPipe[1])
        guard result == 0 else {
            Glibc.close(stdinPipe[1])
            Glibc.close(stdoutPipe[0])
            throw .failed("cannot start \(arguments[0]): \(String(cString: strerror(result)))")
        }
        pid = child
        input = stdinPipe[1]
        output = stdoutPipe[0]
    }

    /// Sends one line to the child's stdin.
    func send(_ line: String) throws(BenchError) {
        let bytes = Array((line + "\n").utf8)
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.write(input, $0.baseAddress, $0.count) }
            guard count > 0 else { throw .failed("\(command): cannot write to its stdin") }
            sent += count
        }
    }

    /// Closes the child's stdin (end of input).
    func closeInput() {
        if input >= 0 { Glibc.close(input) }
        input = -1
    }

    /// The next line of the child's stdout, nil at end of output.
    func readLine() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: 10) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let count = chunk.withUnsafeMutableBytes { Glibc.read(output, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else {
                if buffer.isEmpty { return nil }
                defer { buffer = [] }
                return String(decoding: buffer, as: UTF8.self)
            }
            buffer += chunk[..<count]
        }
    }

    /// Everything left on the child's stdout.
    func readAll() -> String {
        var lines: [String] = []
        while let line = readLine() { lines.append(line) }
        return lines.joined(separator: "\n")
    }

    /// Closes the pipes and reaps the child.
    /// Returns the exit status (128 + signal when killed).
    func wait() throws(BenchError) -> Int32 {
        closeInput()
        if output >= 0 { Glibc.close(output) }
        output = -1
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw .failed("waitpid \(command): \(String(cString: strerror(errno)))") }
        }
        return (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }

    /// The child's stderr so far (for error messages).
    var stderrText: String {
        (try? String(contentsOfFile: stderrPath, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
    }

    /// Runs `arguments` to completion; returns its stdout, or throws with its stderr.
    static func run(_ arguments: [String], stderrPath: String) throws(BenchError) -> String {
        let child = try Subprocess(arguments, stderrPath: stderrPath)
        child.closeInput()
        let text = child.readAll()
        let status = try child.wait()
        guard status == 0 else { throw .failed("\(child.command) exited with \(status): \(child.stderrText)") }
        return text
    }
}
