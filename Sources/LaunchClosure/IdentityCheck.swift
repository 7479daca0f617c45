import Foundation
import LoaderCore

extension ImageIdentity {
    /// The identity of the file at `path` as it is now. `contentOnly` leaves out inode,
    /// mtime and ctime, for closures that travel between machines.
    public static func current(path: String, uuid: [UInt8]?, contentOnly: Bool) throws(ClosureError) -> ImageIdentity {
        guard let status = UnsafeFileIO.status(path), let data = FileManager.default.contents(atPath: path) else {
            throw .stale(path: path, image: path, what: "cannot be read")
        }
        return ImageIdentity(
            size: status.size, mtimeSeconds: contentOnly ? 0 : status.mtimeSeconds,
            mtimeNanoseconds: contentOnly ? 0 : status.mtimeNanoseconds, inode: contentOnly ? 0 : status.inode,
            ctimeSeconds: contentOnly ? 0 : status.ctimeSeconds, ctimeNanoseconds: contentOnly ? 0 : status.ctimeNanoseconds,
            uuid: uuid, contentHash: UnsafeHash.xxh3(Array(data)))
    }

    /// How close to the closure's write an image may have changed for stat to be untrusted:
    /// above any file system's timestamp granularity.
    static let racyWindowSeconds: Int64 = 2

    /// Whether this identity was taken so close to `builtAt` (the closure file's mtime, in seconds) that
    /// the image could have been rewritten afterwards within the same timestamp tick.
    func isRacy(builtAt: Int64) -> Bool {
        let (latest, overflow) = Swift.max(mtimeSeconds, ctimeSeconds).addingReportingOverflow(ImageIdentity.racyWindowSeconds)
        return overflow || latest >= builtAt
    }

    /// How the file at `path` differs from this identity, or nil if it is the same file.
    /// The cheap stat check (size, mtime, ctime, inode) comes first; when stat differs (a
    /// fresh checkout, a touch) but the content hash matches, the image is still the one
    /// the closure was built from. A racy identity (taken within 2 s of the closure's
    /// write) is always hashed.
    func staleness(of path: String, contentOnly: Bool, racy: Bool = false) -> String? {
        guard let status = UnsafeFileIO.status(path) else { return "was removed" }
        if status.size != size { return "changed size (\(size) -> \(status.size) bytes)" }
        if !contentOnly, !racy, status.mtimeSeconds == mtimeSeconds, status.mtimeNanoseconds == mtimeNanoseconds,
           status.ctimeSeconds == ctimeSeconds, status.ctimeNanoseconds == ctimeNanoseconds, status.inode == inode {
            return nil
        }
        guard let data = FileManager.default.contents(atPath: path) else { return "cannot be read" }
        if UnsafeHash.xxh3(Array(data)) != contentHash {
            return status.inode != inode && !contentOnly ? "was replaced by another file (content differs)" : "has new content"
        }
        return nil
    }
}

extension ClosureImage {
    /// A file now present where the dependency search found nothing at install time: it
    /// would shadow the dylib the closure resolved, so the closure no longer says what a
    /// launch would load.
    func shadowingFile() -> String? {
        absentPaths.first { UnsafeFileIO.status($0) != nil }
    }

    func staleness(contentOnly: Bool, builtAt: Int64?) -> String? {
        let racy = builtAt.map { identity.isRacy(builtAt: $0) } ?? false
        if let what = identity.staleness(of: path, contentOnly: contentOnly, racy: racy) { return what }
        return shadowingFile().map { "has a dependency shadowed by a new file at \($0)" }
    }
}

extension LaunchClosure {
    /// The first image that changed on disk, as a stale-closure error, or nil if all are current.
    public func staleImage(closurePath: String) -> ClosureError? {
        let builtAt = UnsafeFileIO.status(closurePath).map(\.mtimeSeconds)
        for image in images {
            if let what = image.staleness(contentOnly: contentOnlyIdentity, builtAt: builtAt) {
                return .stale(path: closurePath, image: image.path, what: what)
            }
        }
        return nil
    }

    /// Every image that changed on disk, for `verify`. With `closurePath`, images whose
    /// identity is racy against the closure file's mtime are hashed.
    public func staleImages(closurePath: String? = nil) -> [(image: String, what: String)] {
        let builtAt = closurePath.flatMap(UnsafeFileIO.status).map(\.mtimeSeconds)
        return images.compactMap { image in
            image.staleness(contentOnly: contentOnlyIdentity, builtAt: builtAt).map { (image.path, $0) }
        }
    }
}
