import ProcessRunner

/// Why a benchmark could not be run: a tool failed, an input is missing or unusable.
package enum BenchError: Error, CustomStringConvertible {
    case failed(String)
    /// A child process (a tool, the glibc harness) could not be run or talked to: what was
    /// being done, and the runner's failure.
    case process(String, ProcessRunner.Failure)
    /// A system call on `path` failed with `errno`: what it was doing.
    case systemCall(path: String, what: String, errno: Int32)

    package var description: String {
        switch self {
        case let .failed(text): text
        case let .process(what, failure): "\(what): \(failure)"
        case let .systemCall(path, what, errno): "\(path): \(what) (errno \(errno))"
        }
    }
}
