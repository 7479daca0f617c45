import LoaderCore
import ClosureFormat
import LoaderSystem

/// Who may have written a closure, the way OpenSSH's StrictModes decides whether to trust
/// `authorized_keys`: a closure is used only if the file and its cache directory are owned
/// by the invoking user or root and are not writable by group or others. A sticky directory
/// writable by others (`/tmp`-like) is acceptable only for a file the invoking user owns: the
/// sticky bit stops others from replacing it, not from planting their own.
package enum ClosureOwnership {
    /// Why a closure cannot be trusted: who owns or can write what (worded in a
    /// ``ClosureError/untrusted(path:what:)``). Ancestors are the directories above the
    /// closure's on its real path.
    package enum Problem: Equatable, Sendable, CustomStringConvertible {
        case fileOwner(owner: UInt32, user: UInt32)
        case fileWritable(mode: UInt32)
        case directoryOwner(owner: UInt32, user: UInt32)
        /// The directory is sticky and writable by others, and the file is not the user's.
        case stickyDirectory(fileOwner: UInt32)
        case directoryWritable(mode: UInt32)
        case unresolvable(directory: String)
        case ancestorOwner(path: String, owner: UInt32, user: UInt32)
        /// Writable by group or others without the sticky bit: they could rename what is below.
        case ancestorWritable(path: String, mode: UInt32)

        package var description: String {
            switch self {
            case let .fileOwner(owner, user): "the file is owned by uid \(owner), not by you (uid \(user)) or root"
            case let .fileWritable(mode): "the file is writable by group or others (mode \(octal(mode)))"
            case let .directoryOwner(owner, user): "its directory is owned by uid \(owner), not by you (uid \(user)) or root"
            case let .stickyDirectory(fileOwner): "its directory is sticky but writable by others, and the file is not yours (uid \(fileOwner))"
            case let .directoryWritable(mode): "its directory is writable by group or others (mode \(octal(mode)))"
            case let .unresolvable(directory): "its directory \(directory) cannot be resolved to a real path"
            case let .ancestorOwner(path, owner, user):
                "\(path), above its directory, is owned by uid \(owner), not by you (uid \(user)) or root: its owner could replace the cache"
            case let .ancestorWritable(path, mode):
                "\(path), above its directory, is writable by group or others (mode \(octal(mode))) and not sticky: they could replace the cache"
            }
        }
    }

    /// Checks that user `user` can trust a closure with status `file` in a directory with
    /// status `directory`; the problem when it cannot.
    package static func check(file: FileStatus, directory: FileStatus, user: UInt32) -> Problem? {
        if file.ownerID != user, file.ownerID != 0 { return .fileOwner(owner: file.ownerID, user: user) }
        if file.mode & 0o022 != 0 { return .fileWritable(mode: file.mode) }
        if directory.ownerID != user, directory.ownerID != 0 { return .directoryOwner(owner: directory.ownerID, user: user) }
        guard directory.mode & 0o022 != 0 else { return nil }
        let sticky = directory.mode & 0o1000 != 0
        if sticky, file.ownerID == user { return nil }
        return sticky ? .stickyDirectory(fileOwner: file.ownerID) : .directoryWritable(mode: directory.mode)
    }

    /// Checks every directory above `directory` as OpenSSH's `secure_path` does, on the real
    /// path (a link cannot hide where the cache is): each owned by `user` or root and not
    /// writable by group or others, except that a sticky one (`/tmp`) is accepted, since others
    /// cannot rename what it holds (a cache under `/tmp/USER-owned-dir` is common and safe).
    /// `status` stats a path (the file system, or a table in tests).
    package static func checkAncestors(of directory: String, user: UInt32, realPath: (String) -> String?,
                                      status: (String) -> FileStatus?) -> Problem? {
        guard let resolved = realPath(directory) else { return .unresolvable(directory: directory) }
        return checkAncestors(of: resolved, directory: directory, user: user, status: status)
    }

    /// ``checkAncestors(of:user:realPath:status:)`` on the file system. A normalized path none
    /// of whose components is a link is its own real path: its ancestors' `lstat`s are their
    /// statuses and no `realpath` is needed (half the system calls of a small launch's
    /// check); with a link anywhere the path is resolved first. `linkStatus`: the directory's
    /// own `lstat`, when the caller has it.
    package static func checkAncestors(of directory: String, user: UInt32, linkStatus: FileStatus? = nil) -> Problem? {
        if PathResolver.normalize(directory) == directory, (linkStatus ?? FileStatus.ofLink(directory)).map({ !$0.isSymbolicLink }) == true {
            var link = false
            let problem = checkAncestors(of: directory, directory: directory, user: user) { ancestor in
                let status = FileStatus.ofLink(ancestor)
                if status?.isSymbolicLink == true { link = true }
                return status
            }
            if !link { return problem }
        }
        return checkAncestors(of: directory, user: user, realPath: RealPath.of, status: FileStatus.of)
    }

    /// Each directory above the real path `resolved` of `directory`, from the nearest outward,
    /// checked with its `status`; the first problem.
    private static func checkAncestors(of resolved: String, directory: String, user: UInt32, status: (String) -> FileStatus?) -> Problem? {
        let bytes = Array(resolved.utf8)
        var end = bytes.count
        // Each ancestor is the path up to a separator, from the nearest one outward.
        while let slash = bytes[..<end].lastIndex(of: UInt8(ascii: "/")), !(slash == 0 && end == 1) {
            end = max(slash, 1)
            let ancestor = String(decoding: bytes[..<end], as: UTF8.self)
            guard let info = status(ancestor), !info.isSymbolicLink else { return .unresolvable(directory: directory) }
            if info.ownerID != user, info.ownerID != 0 { return .ancestorOwner(path: ancestor, owner: info.ownerID, user: user) }
            if info.mode & 0o022 != 0, info.mode & 0o1000 == 0 { return .ancestorWritable(path: ancestor, mode: info.mode) }
        }
        return nil
    }

    /// Checks the `.ipa` work area (`CACHE/.work`, status `workArea` of what was opened
    /// without following a link) in the cache directory `cacheDirectory` (status `cache`) by
    /// the rules a closure in that directory meets (``check(file:directory:user:)``, and
    /// ``checkAncestors(of:user:)``); what is wrong and the fix, in one line, when it fails.
    package static func checkWorkArea(_ workArea: FileStatus, cache: FileStatus, cacheDirectory: String, user: UInt32) -> String? {
        guard let problem = check(file: workArea, directory: cache, user: user)
            ?? checkAncestors(of: cacheDirectory, user: user) else { return nil }
        switch problem {
        case let .fileOwner(owner, user):
            return "the work area is owned by uid \(owner), not by you (uid \(user)) or root: another user may have planted it; remove it, or use a cache of your own (--cache)"
        case let .fileWritable(mode):
            return "the work area is writable by group or others (mode \(octal(mode))): another user could plant files in it; chmod 700 it"
        case let .stickyDirectory(fileOwner):
            return "the work area is not yours (uid \(fileOwner)) and its cache directory is writable by others: remove it, or use a cache of your own (--cache)"
        default:
            return "the work area's cache cannot be trusted: \(problem.description); use a cache directory only you can write (--cache)"
        }
    }

    /// ``checkWorkArea(_:cache:cacheDirectory:user:)`` for the user this process acts as.
    package static func checkWorkArea(_ workArea: FileStatus, cache: FileStatus, cacheDirectory: String) -> String? {
        checkWorkArea(workArea, cache: cache, cacheDirectory: cacheDirectory, user: UnsafeFileIO.effectiveUserID)
    }

    static func octal(_ mode: UInt32) -> String { String(mode & 0o7777, radix: 8) }
}
