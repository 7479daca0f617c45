import Foundation
import LoaderCore

extension ImageIdentity {
    /// The identity of the file at `path` as it is now. `contentOnly` leaves out inode and
    /// mtime, for closures that travel between machines.
    static func current(path: String, uuid: [UInt8]?, contentOnly: Bool) throws(ClosureError) -> ImageIdentity {
        guard let status = UnsafeFileIO.status(path), let data = FileManager.default.contents(atPath: path) else {
            throw .stale(path: path, image: path, what: "cannot be read")
        }
        return ImageIdentity(
            size: status.size, mtimeSeconds: contentOnly ? 0 : status.mtimeSeconds,
            mtimeNanoseconds: contentOnly ? 0 : status.mtimeNanoseconds, inode: contentOnly ? 0 : status.inode,
            uuid: uuid, contentHash: UnsafeHash.xxh3(Array(data)))
    }

    /// How the file at `path` differs from this identity, or nil if it is the same file.
    /// The cheap stat check comes first; when stat differs (a fresh checkout, a touch) but
    /// the content hash matches, the image is still the one the closure was built from.
    func staleness(of path: String, contentOnly: Bool) -> String? {
        guard let status = UnsafeFileIO.status(path) else { return "was removed" }
        if status.size != size { return "changed size (\(size) -> \(status.size) bytes)" }
        if !contentOnly, status.mtimeSeconds == mtimeSeconds, status.mtimeNanoseconds == mtimeNanoseconds, status.inode == inode {
            return nil
        }
        guard let data = FileManager.default.contents(atPath: path) else { return "cannot be read" }
        if UnsafeHash.xxh3(Array(data)) != contentHash {
            return status.inode != inode && !contentOnly ? "was replaced by another file (content differs)" : "has new content"
        }
        return nil
    }
}

extension LaunchClosure {
    /// The first image that changed on disk, as a stale-closure error, or nil if all are current.
    public func staleImage(closurePath: String) -> ClosureError? {
        for image in images {
            if let what = image.identity.staleness(of: image.path, contentOnly: contentOnlyIdentity) {
                return .stale(path: closurePath, image: image.path, what: what)
            }
        }
        return nil
    }

    /// Every image that changed on disk, for `verify`.
    public func staleImages() -> [(image: String, what: String)] {
        images.compactMap { image in
            image.identity.staleness(of: image.path, contentOnly: contentOnlyIdentity).map { (image.path, $0) }
        }
    }
}
