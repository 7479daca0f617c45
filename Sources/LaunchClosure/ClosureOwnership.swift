import LoaderCore
import ClosureFormat

/// Who may have written a closure, the way OpenSSH's StrictModes decides whether to trust
/// `authorized_keys`: a closure is used only if the file and its cache directory are owned
/// by the invoking user or root and are not writable by group or others. A sticky directory
/// writable by others (`/tmp`-like) is acceptable only for a file the invoking user owns: the
/// sticky bit stops others from replacing it, not from planting their own.
public enum ClosureOwnership {
    /// Why a closure cannot be trusted: who owns or can write what.
    public enum Problem: Error, Equatable, Sendable, CustomStringConvertible {
        /// The file's owner (`owner`) is neither the user nor root.
        case fileOwner(owner: UInt32, user: UInt32)
        /// The file is writable by group or others.
        case fileWritable(mode: UInt32)
        /// The directory's owner (`owner`) is neither the user nor root.
        case directoryOwner(owner: UInt32, user: UInt32)
        /// The directory is sticky and writable by others, and the file (owned by `fileOwner`) is not the user's.
        case stickyDirectory(fileOwner: UInt32)
        /// The directory is writable by group or others.
        case directoryWritable(mode: UInt32)

        public var description: String {
            switch self {
            case let .fileOwner(owner, user): "the file is owned by uid \(owner), not by you (uid \(user)) or root"
            case let .fileWritable(mode): "the file is writable by group or others (mode \(octal(mode)))"
            case let .directoryOwner(owner, user): "its directory is owned by uid \(owner), not by you (uid \(user)) or root"
            case let .stickyDirectory(fileOwner): "its directory is sticky but writable by others, and the file is not yours (uid \(fileOwner))"
            case let .directoryWritable(mode): "its directory is writable by group or others (mode \(octal(mode)))"
            }
        }
    }

    /// Checks that user `user` can trust a closure with status `file` in a directory with
    /// status `directory`; the problem when it cannot.
    public static func check(file: FileStatus, directory: FileStatus, user: UInt32) throws(Problem) {
        if file.ownerID != user, file.ownerID != 0 { throw .fileOwner(owner: file.ownerID, user: user) }
        if file.mode & 0o022 != 0 { throw .fileWritable(mode: file.mode) }
        if directory.ownerID != user, directory.ownerID != 0 { throw .directoryOwner(owner: directory.ownerID, user: user) }
        if directory.mode & 0o022 != 0 {
            let sticky = directory.mode & 0o1000 != 0
            if sticky, file.ownerID == user { return }
            throw sticky ? .stickyDirectory(fileOwner: file.ownerID) : .directoryWritable(mode: directory.mode)
        }
    }

    static func octal(_ mode: UInt32) -> String { String(mode & 0o7777, radix: 8) }
}
