import LaunchPlan

/// Why a benchmark could not be run (a tool failed, an input is missing or unusable), as
/// the line `dyld3 bench` reports.
extension CommandFailure {
    static func failed(_ text: String) -> CommandFailure { CommandFailure(splitting: text, kind: "error") }

    /// A child process (a tool, the glibc harness) could not be run or talked to: what was
    /// being done, and the runner's failure.
    static func process(_ what: String, _ failure: CommandFailure) -> CommandFailure { failed("\(what): \(failure)") }

    /// A system call on `path` failed with `errno`: what it was doing.
    static func systemCall(path: String, what: String, errno: Int32) -> CommandFailure { failed("\(path): \(what) (errno \(errno))") }
}
