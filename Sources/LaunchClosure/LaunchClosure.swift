import LoaderCore
import MachOReader

/// How an image on disk is recognized as the one the closure was built from.
public struct ImageIdentity: Equatable, Sendable {
    public var size: UInt64
    /// Modification time and inode: 0 in content-only closures (caches that travel).
    public var mtimeSeconds: Int64
    public var mtimeNanoseconds: UInt64
    public var inode: UInt64
    /// Status-change time (0 in content-only closures): a rewrite with the mtime set back
    /// still moves it, so the stat check cannot be fooled by `utimes`.
    public var ctimeSeconds: Int64
    public var ctimeNanoseconds: UInt64
    public var uuid: [UInt8]?
    /// xxh3-64 of the whole file.
    public var contentHash: UInt64

    public init(size: UInt64, mtimeSeconds: Int64, mtimeNanoseconds: UInt64, inode: UInt64,
                ctimeSeconds: Int64 = 0, ctimeNanoseconds: UInt64 = 0, uuid: [UInt8]?, contentHash: UInt64) {
        self.size = size
        self.mtimeSeconds = mtimeSeconds
        self.mtimeNanoseconds = mtimeNanoseconds
        self.inode = inode
        self.ctimeSeconds = ctimeSeconds
        self.ctimeNanoseconds = ctimeNanoseconds
        self.uuid = uuid
        self.contentHash = contentHash
    }
}

/// One image of a closure: identity, mapping plan, dependency edges, initializers, and
/// its fixups, already resolved and encoded (see docs/closure-format.md).
public struct ClosureImage: Equatable, Sendable {
    public var path: String
    public var installName: String
    public var identity: ImageIdentity
    public var plan: ImagePlan
    /// Dependencies in load-command order: install name, link kind, node index (-1: missing weak).
    public var dependencies: [(installName: String, kind: DylibLinkKind, target: Int)]
    /// Initializer functions, as offsets from the image's base, in the order they run.
    public var initializers: [UInt64]
    /// The image's LC_RPATHs: inputs that affected path resolution.
    public var rpaths: [String]
    /// Paths tried and found absent before each dependency of this image was found (or all
    /// of a missing weak dylib's candidates): a file appearing at one would now be loaded
    /// instead, so the closure is stale while any of them exists.
    public var absentPaths: [String] = []
    /// Encoded rebase runs and bind runs.
    public var rebaseRuns: [UInt8]
    public var bindRuns: [UInt8]
    public var rebaseCount: Int
    public var bindCount: Int

    public static func == (a: ClosureImage, b: ClosureImage) -> Bool {
        a.path == b.path && a.installName == b.installName && a.identity == b.identity && a.plan == b.plan
            && a.dependencies.elementsEqual(b.dependencies, by: { $0.installName == $1.installName && $0.kind == $1.kind && $0.target == $1.target })
            && a.initializers == b.initializers && a.rpaths == b.rpaths && a.absentPaths == b.absentPaths && a.rebaseRuns == b.rebaseRuns && a.bindRuns == b.bindRuns
    }
}

/// A launch closure: everything a launch needs to map the images of an app and fix them
/// up without parsing Mach-O, searching paths or looking symbols up.
public struct LaunchClosure: Equatable, Sendable {
    /// The closure file format version (the header's).
    public static let formatVersion: UInt32 = 2
    /// Who built it.
    public static let builderIdentity = "dyld3-swift closure builder 1"

    public var builder: String
    public var arch: String
    /// The system root used for absolute install names ("" for none).
    public var root: String
    /// Identities without inode and mtime, validated by content hash alone.
    public var contentOnlyIdentity: Bool
    /// Images in load order; the first `rootCount` are the launch's roots (host, app).
    public var images: [ClosureImage]
    public var rootCount: Int
    /// Every distinct bind target, shared by the images' bind runs.
    public var bindTargets: [BindTarget]
    /// Image indices in initializer order.
    public var initializerOrder: [Int]
    /// The main image's entry point, an offset from its base.
    public var entryOffset: UInt64?
    /// Weak-linked dylibs that were missing at install time, and who needed them.
    public var missingWeakDylibs: [(installName: String, neededBy: String)]

    public static func == (a: LaunchClosure, b: LaunchClosure) -> Bool {
        a.builder == b.builder && a.arch == b.arch && a.root == b.root && a.contentOnlyIdentity == b.contentOnlyIdentity
            && a.images == b.images && a.rootCount == b.rootCount && a.bindTargets == b.bindTargets
            && a.initializerOrder == b.initializerOrder && a.entryOffset == b.entryOffset
            && a.missingWeakDylibs.elementsEqual(b.missingWeakDylibs, by: { $0 == $1 })
    }

    public var totalRebases: Int { images.reduce(0) { $0 + $1.rebaseCount } }
    public var totalBinds: Int { images.reduce(0) { $0 + $1.bindCount } }
}
