import SystemPackage

/// A failed system call: which call, and the `Errno` it failed with (or, for a call that
/// succeeded with a result the loader refuses, such as an `open` that found a directory,
/// why it was refused). Its description is the error's text (`strerror`), after the
/// call's name where the message names it. A kind, thrown as ``LoadError/systemCall(_:)``.
public struct SystemCallFailure: Equatable, Sendable, CustomStringConvertible {
    /// What went wrong.
    public enum Cause: Equatable, Sendable {
        /// The call failed with this error.
        case errno(Errno)
        /// The call succeeded but its result was refused, for this reason.
        case refused(String)
    }

    /// The call, as messages name it ("mmap", "UFFDIO_REGISTER", "create /a/.tmp").
    public let call: String
    public let cause: Cause
    /// Whether ``description`` starts with ``call``.
    public let namesCall: Bool

    /// `call` failed with `errno`; the description names the call when `namesCall`.
    public init(_ call: String, _ errno: Errno, namesCall: Bool = false) {
        self.call = call
        cause = .errno(errno)
        self.namesCall = namesCall
    }

    /// `call` succeeded with a result refused for `reason`.
    public init(_ call: String, refused reason: String, namesCall: Bool = false) {
        self.call = call
        cause = .refused(reason)
        self.namesCall = namesCall
    }

    /// The error the call failed with; nil when its result was refused.
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
