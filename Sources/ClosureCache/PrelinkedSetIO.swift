import ClosureFormat
import LoaderCore
import LaunchPlan
import MachOReader
import LoaderSystem

extension ClosureCache {
    /// The file extension of a prelinked set, written beside its app's closure.
    package static let prelinkedSetExtension = "dyld3prelinked"

    /// The prelinked set's path for the closure at `closurePath`: the same name, its own extension.
    package static func prelinkedSetPath(forClosure closurePath: String) -> String {
        sibling(of: closurePath, extension: fileExtension, as: prelinkedSetExtension)
    }

    /// `path` with its extension `old` (when it has it) replaced by `new`: a file kept beside another.
    static func sibling(of path: String, extension old: String, as new: String) -> String {
        let suffix = "." + old
        return (path.hasSuffix(suffix) ? String(path.dropLast(suffix.count)) : path) + "." + new
    }
}

extension PrelinkedSetFile {
    /// The largest set file opened: thousands of frameworks' segments are a few hundred MiB.
    package static let maxFileSize: UInt64 = 4 << 30

    /// A set file opened once (no symlink followed), its ownership, header and metadata
    /// checked; the data is mapped from `fd`.
    package final class Opened {
        let file: UnsafeFileIO.OpenFile
        package let path: String
        package let header: PrelinkedSetHeader
        package let set: PrelinkedSet
        /// The descriptor the data is mapped from (alive as long as this).
        package var fd: Int32 { file.fd }
        /// `fstat` of the set file as opened.
        package var status: FileStatus { file.status }
        /// The set file's mtime (seconds): identities taken within 2 s of it are racy.
        package var builtAt: Int64 { file.status.mtimeSeconds }

        init(file: UnsafeFileIO.OpenFile, path: String, header: PrelinkedSetHeader, set: PrelinkedSet) {
            (self.file, self.path, self.header, self.set) = (file, path, header, set)
        }

        /// Checks the data against the signed SHA-256 or the header's xxh3 (reads all of it).
        package func checkData() throws(ClosureError) {
            try PrelinkedSetFile.checkData(try data(), header: header, path: path)
        }

        /// The data, mapped read-only from the descriptor the set was opened on.
        package func data() throws(ClosureError) -> ByteView {
            guard let all = file.mapAll(), let data = try? all.slice(Int(header.dataOffset), Int(header.dataSize)) else {
                throw .corrupt(path: path, offset: Int(header.dataOffset), what: "the data cannot be mapped")
            }
            return data
        }
    }

    /// Opens and checks the set at `path`: ownership, header, checksum, with `trustKey` its
    /// signature, metadata. The images' identities and the data are the caller's to check.
    /// `sharedCache`: as ``PrelinkedSetFile/decode(prefix:fileSize:path:trusting:sharedCache:)`` calls it.
    package static func open(_ path: String, trusting trustKey: ClosureTrustKey? = nil,
                             sharedCache: ((ClosureSharedCache) throws(ClosureError) -> Void)? = nil) throws(ClosureError) -> Opened {
        let file = try UnsafeFileIO.openNoFollow(path).get()
        try ClosureFile.checkOwnership(path, file.status)
        guard file.status.size <= maxFileSize else {
            throw .corrupt(path: path, offset: 0, what: "\(file.status.size) bytes is over the \(maxFileSize)-byte limit for a prelinked set")
        }
        // The header, then as much as it declares of metadata (bounded; checked with the rest).
        let fields = file.read(offset: 0, count: PrelinkedSetHeader.size)
        let metadataSize = min(PrelinkedSetHeader.declaredMetadataSize(fields), PrelinkedSetHeader.maxMetadataSize, file.status.size)
        let prefix = ByteView(file.read(offset: 0, count: PrelinkedSetHeader.size + Int(metadataSize)))
        let (header, set) = try decode(prefix: prefix, fileSize: file.status.size, path: path, trusting: trustKey, sharedCache: sharedCache)
        try set.closure.checkRoots(closurePath: path)
        return Opened(file: file, path: path, header: header, set: set)
    }

    /// What a set's header declares, unchecked: what a launch matches the set's slid copy
    /// against before the set is opened and checked.
    package struct DeclaredIdentity: Sendable {
        package let checksum: UInt64
        package let metadataSize: UInt64
        package let dataSize: UInt64
        package let dataHash: UInt64
    }

    /// The identity the first bytes of the set at `path` declare; nil when it is not a set.
    package static func declaredIdentity(_ path: String) -> DeclaredIdentity? {
        guard case let .success(file) = UnsafeFileIO.openNoFollow(path) else { return nil }
        let fields = file.read(offset: 0, count: PrelinkedSetHeader.size)
        guard fields.count == PrelinkedSetHeader.size, Array(fields[0..<8]) == PrelinkedSetHeader.magic else { return nil }
        let word = fields.littleEndianWord
        return DeclaredIdentity(checksum: word(8), metadataSize: word(24), dataSize: word(40), dataHash: word(48))
    }

    /// Writes the set atomically, read-only; a failure leaves any existing file as it was.
    package static func write(_ set: PrelinkedSet, data: [UInt8], to path: String, signedWith signer: ClosureSigningKey? = nil) throws(ClosureError) {
        try UnsafeFileIO.writeCacheFile(encode(set, data: data, signedWith: signer), to: path)
    }
}

extension PrelinkedSet {
    /// Checks that every source image is still the file the set was built from by its `stat`
    /// alone (the images were copied: a changed status makes the set stale even with the same
    /// content), and that no absent path of the dependency search has appeared. A racy identity
    /// or `alwaysHash` (`--hash-images`) hashes the image as well. A cached image is the
    /// cache's: the launch checks the cache's UUID once, as it maps it.
    package func checkSources(setPath: String, builtAt: Int64?, alwaysHash: Bool, hashedImages: inout Int) throws(ClosureError) {
        for image in closure.images where image.cacheSlot == nil {
            let identity = image.identity
            guard let status = FileStatus.of(image.path) else {
                throw .stale(path: setPath, image: image.path, what: "was removed")
            }
            guard status.isRegularFile else { throw .stale(path: setPath, image: image.path, what: "is not a regular file") }
            if status.size != identity.size {
                throw .stale(path: setPath, image: image.path, what: ImageIdentity.Staleness.changedSize(recorded: identity.size, now: status.size).description)
            }
            guard identity.hasTimesAndInode(of: status) else {
                throw .stale(path: setPath, image: image.path, what: "changed since the set was built (inode or times differ)")
            }
            let racy = builtAt.map { identity.isRacy(builtAt: $0) } ?? true
            if alwaysHash || racy {
                var hashed = false
                _ = try image.openChecked(closurePath: setPath, contentOnly: false, builtAt: nil, checks: IdentityChecks(alwaysHash: true), hashed: &hashed)
                hashedImages += 1
            }
            if let shadow = image.shadowingFile() {
                throw .stale(path: setPath, image: image.path, what: "has a dependency shadowed by a new file at \(shadow)")
            }
        }
    }
}
