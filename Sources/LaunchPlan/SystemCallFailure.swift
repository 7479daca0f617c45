import SystemPackage

/// A failed system call: which call, and the `Errno` it failed with, or why a result it
/// succeeded with was refused (an `open` that found a directory). Its description is the
/// error's text, after the call's name when `namesCall`. Thrown as ``LoadError/systemCall(_:)``.
public struct SystemCallFailure: Equatable, Sendable, CustomStringConvertible {
    public enum Cause: Equatable, Sendable {
        case errno(Errno)
        case refused(String)
    }

    /// The call, as messages name it ("mmap", "UFFDIO_REGISTER", "create /a/.tmp").
    public let call: String
    public let cause: Cause
    public let namesCall: Bool

    public init(_ call: String, _ errno: Errno, namesCall: Bool = false) {
        self.call = call
        cause = .errno(errno)
        self.namesCall = namesCall
    }

    public init(_ call: String, refused reason: String, namesCall: Bool = false) {
        self.call = call
        cause = .refused(reason)
        self.namesCall = namesCall
    }

    public var errno: Errno? {
        if case let .errno(errno) = cause { errno } else { nil }
    }

    public var description: String {
        let text = switch cause {
        case let .errno(errno): errno.description
        case let .refused(reason): reason
        }
        return namesCall ? "\(call): \(text)" : text
    }
}
