import LoaderCore

/// Who may have written a closure, the way OpenSSH's StrictModes decides whether to trust
/// `authorized_keys`: a closure is used only if the file and its cache directory are owned
/// by the invoking user or root and are not writable by group or others. A sticky directory
/// writable by others (`/tmp`-like) is acceptable only for a file the invoking user owns: the
/// sticky bit stops others from replacing it, not from planting their own.
public enum ClosureOwnership {
    /// Why a closure with status `file` in a directory with status `directory` cannot be
    /// trusted by user `user`, or nil when it can.
    public static func problem(file: FileStatus, directory: FileStatus, user: UInt32) -> String? {
        if file.ownerID != user, file.ownerID != 0 {
            return "the file is owned by uid \(file.ownerID), not by you (uid \(user)) or root"
        }
        if file.mode & 0o022 != 0 {
            return "the file is writable by group or others (mode \(octal(file.mode)))"
        }
        if directory.ownerID != user, directory.ownerID != 0 {
            return "its directory is owned by uid \(directory.ownerID), not by you (uid \(user)) or root"
        }
        if directory.mode & 0o022 != 0 {
            let sticky = directory.mode & 0o1000 != 0
            if sticky, file.ownerID == user { return nil }
            return sticky
                ? "its directory is sticky but writable by others, and the file is not yours (uid \(file.ownerID))"
                : "its directory is writable by group or others (mode \(octal(directory.mode)))"
        }
        return nil
    }

    static func octal(_ mode: UInt32) -> String { String(mode & 0o7777, radix: 8) }
}
