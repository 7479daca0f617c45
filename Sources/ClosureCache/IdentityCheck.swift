import LoaderCore
import ClosureFormat
import LaunchPlan
import MachOReader
import LoaderSystem

extension ImageIdentity {
    /// The identity of the file at `path` as it is now. `contentOnly` leaves out inode,
    /// mtime and ctime, for closures that travel between machines.
    package static func current(path: String, uuid: [UInt8]?, contentOnly: Bool, signature: SignedImage? = nil) throws(ClosureError) -> ImageIdentity {
        guard let file = try? ImageDescriptor.open(path), let hash = file.contentHash() else {
            throw .stale(path: path, image: path, what: "cannot be read")
        }
        return ImageIdentity(status: file.status, contentHash: hash, uuid: uuid, contentOnly: contentOnly, signature: signature)
    }

    /// The identity of `image` as it was read: its file's status then and the hash of the bytes
    /// parsed (no second open or read), or for an image not read from a file of its own, its
    /// path's identity now.
    package static func of(_ image: ImageFile, contentOnly: Bool, signature: SignedImage? = nil) throws(ClosureError) -> ImageIdentity {
        guard let file = image.file else {
            return try current(path: image.path, uuid: image.image.uuid, contentOnly: contentOnly, signature: signature)
        }
        guard let hash = ImageDescriptor.contentHash(ofMapped: file.bytes) else {
            throw .stale(path: image.path, image: image.path, what: "cannot be read")
        }
        return ImageIdentity(status: file.status, contentHash: hash, uuid: image.image.uuid, contentOnly: contentOnly, signature: signature)
    }

    private init(status: FileStatus, contentHash hash: UInt64, uuid: [UInt8]?, contentOnly: Bool, signature: SignedImage?) {
        self.init(
            size: status.size, mtimeSeconds: contentOnly ? 0 : status.mtimeSeconds,
            mtimeNanoseconds: contentOnly ? 0 : status.mtimeNanoseconds, inode: contentOnly ? 0 : status.inode,
            ctimeSeconds: contentOnly ? 0 : status.ctimeSeconds, ctimeNanoseconds: contentOnly ? 0 : status.ctimeNanoseconds,
            uuid: uuid, contentHash: hash, signature: signature)
    }

    /// How close to the closure's write an image may have changed for stat to be untrusted:
    /// above any file system's timestamp granularity.
    static let racyWindowSeconds: Int64 = 2

    /// Whether this identity was taken so close to `builtAt` (the closure file's mtime, in
    /// seconds) that the image could have been rewritten within the same timestamp tick.
    func isRacy(builtAt: Int64) -> Bool {
        let (latest, overflow) = Swift.max(mtimeSeconds, ctimeSeconds).addingReportingOverflow(ImageIdentity.racyWindowSeconds)
        return overflow || latest >= builtAt
    }

    /// Whether `status` has the inode and times this identity recorded: by `stat`, the same
    /// file unchanged (its size compared apart).
    func hasTimesAndInode(of status: FileStatus) -> Bool {
        status.inode == inode && status.mtimeSeconds == mtimeSeconds && status.mtimeNanoseconds == mtimeNanoseconds
            && status.ctimeSeconds == ctimeSeconds && status.ctimeNanoseconds == ctimeNanoseconds
    }

    /// How an open image file differs from the identity a closure recorded for it (worded in a
    /// ``ClosureError/stale(path:image:what:)``): its size, its content unreadable, another
    /// file (inode) with other content, the same file with other content, or its CodeDirectory.
    enum Staleness: Equatable, Sendable, CustomStringConvertible {
        case changedSize(recorded: UInt64, now: UInt64)
        case unreadable
        case replaced
        case newContent
        case signatureChanged(recorded: CDHash, now: CDHash?)

        var description: String {
            switch self {
            case let .changedSize(recorded, now): "changed size (\(recorded) -> \(now) bytes)"
            case .unreadable: "cannot be read"
            case .replaced: "was replaced by another file (content differs)"
            case .newContent: "has new content"
            case let .signatureChanged(recorded, now):
                "has another code signature (cdHash \(now.map(\.hex) ?? "unreadable"), recorded \(recorded.hex))"
            }
        }
    }

    /// How the open `file` (the descriptor the launch maps from) differs from this identity.
    /// The stat check (size, mtime, ctime, inode) comes first; when stat differs (a fresh
    /// checkout, a touch) but the content hash matches, the image is the same. A racy or
    /// content-only identity, or `checks.alwaysHash`, is always hashed (then `hashed` is set).
    func check(_ file: ImageDescriptor, contentOnly: Bool, racy: Bool, checks: IdentityChecks, hashed: inout Bool) -> Staleness? {
        let status = file.status
        if status.size != size { return .changedSize(recorded: size, now: status.size) }
        if checks.codeDirectory, let changed = checkSignature(file) { return changed }
        if !contentOnly, !racy, !checks.alwaysHash, hasTimesAndInode(of: status) { return nil }
        hashed = true
        guard let hash = file.contentHash() else { return .unreadable }
        if hash != contentHash {
            return status.inode != inode && !contentOnly ? .replaced : .newContent
        }
        return nil
    }

    /// A signed image's CodeDirectory, read where the closure recorded it and hashed, must have
    /// the recorded cdHash (dyld4 identifies images by cdHash). The read is bounded by the file.
    func checkSignature(_ file: ImageDescriptor) -> Staleness? {
        guard let signature else { return nil }
        let (end, overflow) = signature.codeDirectoryOffset.addingReportingOverflow(UInt64(signature.codeDirectorySize))
        guard !overflow, end <= file.status.size else { return .signatureChanged(recorded: signature.cdHash, now: nil) }
        let blob = file.read(offset: signature.codeDirectoryOffset, count: signature.codeDirectorySize)
        guard blob.count == signature.codeDirectorySize else { return .signatureChanged(recorded: signature.cdHash, now: nil) }
        let now = signature.hashType.cdHash(of: ByteView(blob))
        return now != signature.cdHash ? .signatureChanged(recorded: signature.cdHash, now: now) : nil
    }
}

/// How a launch checks that an image is the file its closure was built from.
package struct IdentityChecks: Sendable {
    /// Hash the content whatever stat says (`--hash-images`).
    package var alwaysHash: Bool
    /// Hash a signed image's CodeDirectory against its recorded cdHash (off only in the
    /// bench's launches that measure what the check costs).
    package var codeDirectory: Bool

    package init(alwaysHash: Bool = false, codeDirectory: Bool = true) {
        (self.alwaysHash, self.codeDirectory) = (alwaysHash, codeDirectory)
    }
}

extension ClosureImage {
    /// A file now present where the dependency search found nothing at install time: it would
    /// shadow the dylib the closure resolved.
    func shadowingFile() -> String? {
        absentPaths.first { FileStatus.of($0) != nil }
    }

    /// Opens the image and checks it is the file the closure at `closurePath` was built from:
    /// the descriptor to map from, or why the closure is stale (`hashed`: its content was hashed).
    func openChecked(closurePath: String, contentOnly: Bool, builtAt: Int64?, checks: IdentityChecks, hashed: inout Bool) throws(ClosureError) -> ImageDescriptor {
        let file: ImageDescriptor
        do throws(LoadError) {
            file = try ImageDescriptor.open(path)
        } catch let .systemCall(reason) where reason.cause == .refused(ImageDescriptor.notRegularFile) {
            throw .stale(path: closurePath, image: path, what: "is \(reason)")
        } catch {
            throw .stale(path: closurePath, image: path, what: FileStatus.of(path) == nil ? "was removed" : "cannot be opened (\(error))")
        }
        let racy = builtAt.map { identity.isRacy(builtAt: $0) } ?? false
        if let staleness = identity.check(file, contentOnly: contentOnly, racy: racy, checks: checks, hashed: &hashed) {
            throw .stale(path: closurePath, image: path, what: staleness.description)
        }
        if let shadow = shadowingFile() {
            throw .stale(path: closurePath, image: path, what: "has a dependency shadowed by a new file at \(shadow)")
        }
        return file
    }
}

extension ClosureImage {
    /// Opens the image whose identity this process took a moment ago (a dlopen closure built
    /// in process): the same file when its status is the one recorded (inode, size, times),
    /// with no hash taken again. A content-only identity records no status: it is checked in full.
    package func openJustIdentified(closurePath: String, contentOnly: Bool, checks: IdentityChecks) throws(ClosureError) -> ImageDescriptor {
        guard !contentOnly else {
            var hashed = false
            return try openChecked(closurePath: closurePath, contentOnly: true, builtAt: nil, checks: checks, hashed: &hashed)
        }
        let file: ImageDescriptor
        do throws(LoadError) {
            file = try ImageDescriptor.open(path)
        } catch {
            throw .stale(path: closurePath, image: path, what: "cannot be opened (\(error))")
        }
        guard file.status.size == identity.size, identity.hasTimesAndInode(of: file.status) else {
            throw .stale(path: closurePath, image: path, what: "changed while it was being opened")
        }
        return file
    }

    /// Opens each of `images` once and checks it is the file the closure was built from; the
    /// first that is not, as a stale-closure error. With `readAhead`, each is asked to be read
    /// ahead before the next is opened; with `handOff`, handed over as soon as it is checked
    /// (the hand-off closed at the first image that fails).
    static func openAll(_ images: ArraySlice<ClosureImage>, contentOnly: Bool, closurePath: String, closureStatus: FileStatus?, checks: IdentityChecks,
                        readAhead: Bool, handOff: DescriptorHandOff? = nil, hashedImages: inout Int) throws(ClosureError) -> [ImageDescriptor] {
        let builtAt = (closureStatus ?? FileStatus.of(closurePath)).map { $0.mtimeSeconds }
        var files: [ImageDescriptor] = []
        files.reserveCapacity(images.count)
        for image in images {
            var hashed = false
            defer { if hashed { hashedImages += 1 } }
            // An image in the shared cache is the cache's: its UUID is checked once.
            if image.cacheSlot != nil {
                let file = ImageDescriptor.inSharedCache(image.path)
                files.append(file)
                handOff?.hand(file)
                continue
            }
            let file: ImageDescriptor
            do throws(ClosureError) {
                file = try image.openChecked(closurePath: closurePath, contentOnly: contentOnly, builtAt: builtAt, checks: checks, hashed: &hashed)
            } catch {
                handOff?.close()
                throw error
            }
            if readAhead, let range = image.plan.readAheadRange() { file.readAhead(range) }
            files.append(file)
            handOff?.hand(file)
        }
        return files
    }
}

extension LaunchClosure {
    /// Opens every image once and checks it is the file the closure was built from; the launch
    /// maps from these very descriptors (a file renamed over an image path after the check is
    /// never the one mapped).
    package func openImages(closurePath: String, alwaysHash: Bool = false) throws(ClosureError) -> [ImageDescriptor] {
        var hashedImages = 0
        return try openImages(closurePath: closurePath, checks: IdentityChecks(alwaysHash: alwaysHash), hashedImages: &hashedImages)
    }

    /// ``openImages(closurePath:alwaysHash:)`` of the images in `range` with `checks`, counting
    /// in `hashedImages` the images whose content was hashed; `closureStatus`: the closure file's
    /// as it was read (else it is taken from `closurePath`); `readAhead` and `handOff` as
    /// ``ClosureImage/openAll(_:contentOnly:closurePath:closureStatus:checks:readAhead:handOff:hashedImages:)``.
    package func openImages(_ range: Range<Int>? = nil, closurePath: String, closureStatus: FileStatus? = nil, checks: IdentityChecks,
                           readAhead: Bool = false, handOff: DescriptorHandOff? = nil, hashedImages: inout Int) throws(ClosureError) -> [ImageDescriptor] {
        try ClosureImage.openAll(images[range ?? images.indices], contentOnly: contentOnlyIdentity, closurePath: closurePath, closureStatus: closureStatus,
                                 checks: checks, readAhead: readAhead, handOff: handOff, hashedImages: &hashedImages)
    }

    /// The first image that changed on disk, as a stale-closure error, or nil if all are current.
    package func staleImage(closurePath: String) -> ClosureError? {
        do {
            _ = try openImages(closurePath: closurePath)
            return nil
        } catch {
            return error
        }
    }

    /// Every image that changed on disk, for `verify`. With `closurePath`, images whose
    /// identity is racy against the closure file's mtime are hashed.
    package func staleImages(closurePath: String? = nil, alwaysHash: Bool = false) -> [(image: String, what: String)] {
        let builtAt = closurePath.flatMap(FileStatus.of).map(\.mtimeSeconds)
        return (sharedCacheStaleness().map { [(sharedCache?.path ?? "", $0)] } ?? []) + images.compactMap { image in
            var hashed = false
            do throws(ClosureError) {
                _ = try image.openChecked(closurePath: closurePath ?? image.path, contentOnly: contentOnlyIdentity, builtAt: builtAt,
                                          checks: IdentityChecks(alwaysHash: alwaysHash), hashed: &hashed)
                return nil
            } catch {
                guard case let .stale(_, image, what) = error else { return (image.path, "\(error)") }
                return (image, what)
            }
        }
    }
}

extension LaunchClosure {
    /// Why the shared cache the closure binds into is not the one it was built with (removed,
    /// or rebuilt: another UUID, `dyld_cache_header.uuid` at offset 88), or nil.
    func sharedCacheStaleness() -> String? {
        guard let sharedCache else { return nil }
        guard case let .success(file) = UnsafeFileIO.openNoFollow(sharedCache.path) else { return "(the shared cache) cannot be opened" }
        return file.read(offset: 88, count: 16) == sharedCache.uuid ? nil
            : "(the shared cache) was rebuilt: its UUID is not the one the closure binds into"
    }
}

extension ClosureImageTable {
    /// ``LaunchClosure/openImages(_:closurePath:closureStatus:checks:readAhead:handOff:hashedImages:)`` of this table.
    package func openImages(_ range: Range<Int>? = nil, closurePath: String, closureStatus: FileStatus? = nil, checks: IdentityChecks,
                           readAhead: Bool = false, hashedImages: inout Int) throws(ClosureError) -> [ImageDescriptor] {
        try ClosureImage.openAll(images[range ?? images.indices], contentOnly: contentOnlyIdentity, closurePath: closurePath, closureStatus: closureStatus,
                                 checks: checks, readAhead: readAhead, hashedImages: &hashedImages)
    }
}
