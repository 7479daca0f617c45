import SystemPackage

/// A failed system call: which call, and the `Errno` it failed with, or why a result it
/// succeeded with was refused (an `open` that found a directory). Its description is the
/// error's text, after the call's name when `namesCall`. Thrown as ``LoadError/systemCall(_:)``.
package struct SystemCallFailure: Equatable, Sendable, CustomStringConvertible {
    package enum Cause: Equatable, Sendable {
        case errno(Errno)
        case refused(String)
    }

    /// The call, as messages name it ("mmap", "UFFDIO_REGISTER", "create /a/.tmp").
    package let call: String
    package let cause: Cause
    package let namesCall: Bool

    package init(_ call: String, _ errno: Errno, namesCall: Bool = false) {
        (self.call, cause, self.namesCall) = (call, .errno(errno), namesCall)
    }

    package init(_ call: String, refused reason: String, namesCall: Bool = false) {
        (self.call, cause, self.namesCall) = (call, .refused(reason), namesCall)
    }

    package var errno: Errno? {
        if case let .errno(errno) = cause { errno } else { nil }
    }

    package var description: String {
        let text = switch cause {
        case let .errno(errno): errno.description
        case let .refused(reason): reason
        }
        return namesCall ? "\(call): \(text)" : text
    }
}
