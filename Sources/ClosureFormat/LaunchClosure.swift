import LaunchPlan

/// A launch closure: everything a launch needs to map the images of an app and fix them
/// up without parsing Mach-O, searching paths or looking symbols up.
///
/// The body (what the zstd frame of a closure file holds, docs/closure-format.md):
/// ``ClosureBinding``, content-only byte, `rootCount` ULEB, image count +
/// ``ClosureImage``s, bind-target count + ``BindTarget``s, initializer-order count + ULEB
/// image indices, entry flag byte (+ ULEB offset), missing-dylib count + ``ClosureMissingDylib``s,
/// ``ClosureObjC``, ``ClosureThreadLocals``, dlopen-closure count + ``ClosureDlopen``s, ``ClosureSharedCache``.
/// Each record reads and writes itself; this type only strings them together.
package struct LaunchClosure: Equatable, Sendable {
    /// The closure file format version (the header's).
    package static let formatVersion: UInt32 = 12
    /// Who built it.
    package static let builderIdentity = "dyld3-swift closure builder 1"

    /// What the closure was built for: a launch uses it only for that very request.
    package var binding: ClosureBinding
    package var builder: String { get { binding.builder } set { binding.builder = newValue } }
    package var arch: String { get { binding.arch } set { binding.arch = newValue } }
    package var root: String { get { binding.root } set { binding.root = newValue } }
    /// Identities without inode and mtime, validated by content hash alone.
    package var contentOnlyIdentity: Bool
    /// Images in load order; the first `rootCount` are the launch's roots (host, app).
    package var images: [ClosureImage]
    package var rootCount: Int
    /// Every distinct bind target, shared by the images' bind runs.
    package var bindTargets: BindTargetTable
    /// Image indices in initializer order.
    package var initializerOrder: [Int]
    /// The main image's entry point, an offset from its base.
    package var entryOffset: UInt64?
    /// Weak-linked dylibs that were missing at install time, and who needed them.
    package var missingWeakDylibs: [ClosureMissingDylib]
    /// The Objective-C step's writes and `+load` calls (``ClosureObjC/none`` without one).
    package var objc: ClosureObjC
    /// The thread-local-variable step and the host services table (``ClosureThreadLocals/none`` without either).
    package var threadLocals: ClosureThreadLocals
    /// The dlopen closures built with it (`--dlopen`), decoded when a `dlopen` uses one.
    package var dlopens: [ClosureDlopen]
    /// The shared cache its ``ClosureImage/cacheSlot`` images lie in; nil when none does.
    package var sharedCache: ClosureSharedCache?

    package init(binding: ClosureBinding, contentOnlyIdentity: Bool, images: [ClosureImage], rootCount: Int,
                bindTargets: [BindTarget], initializerOrder: [Int], entryOffset: UInt64?, missingWeakDylibs: [ClosureMissingDylib],
                objc: ClosureObjC = .none, threadLocals: ClosureThreadLocals = .none, dlopens: [ClosureDlopen] = []) {
        (self.binding, self.contentOnlyIdentity, self.images, self.rootCount) = (binding, contentOnlyIdentity, images, rootCount)
        self.bindTargets = BindTargetTable(bindTargets)
        (self.initializerOrder, self.entryOffset, self.missingWeakDylibs, self.objc) = (initializerOrder, entryOffset, missingWeakDylibs, objc)
        (self.threadLocals, self.dlopens) = (threadLocals, dlopens)
    }

    /// Per image, the signature its mapped pages are checked against: none for an image in the
    /// shared cache (the cache is checked whole, by its UUID).
    package var mappedSignatures: [SignedImage?] { images.map { $0.cacheSlot == nil ? $0.identity.signature : nil } }

    /// Per image, the pages (offsets from its base) the cache's patches write: empty for an
    /// image outside the cache or without patches.
    package func cachePatchPages(closurePath: String) throws(ClosureError) -> [[UInt64]] {
        try images.map { (image) throws(ClosureError) -> [UInt64] in
            guard image.cacheSlot != nil, image.rebaseCount + image.bindCount > 0 else { return [] }
            let index = try image.fixupPageIndex.pages(path: closurePath)
            return index.pages.map { $0.page * index.pageSize }
        }
    }

    package var totalRebases: Int { images.reduce(0) { $0 + $1.rebaseCount } }
    package var totalBinds: Int { images.reduce(0) { $0 + $1.bindCount } }

    /// Decodes and validates a body: every count bounded, every index in range, every segment
    /// inside its image and not overlapping another, every bind target inside its image, every
    /// initializer and the entry point inside an executable segment.
    init(parsingBody bytes: [UInt8], path: String) throws(ClosureError) {
        let index = try Self.readImageIndex(bytes, path: path)
        let table = try index.table(images: ClosureImage.parse(records: index.records[...], of: bytes, path: path, imageCount: index.records.count))
        try self.init(table: table, body: bytes, tail: index.tail, path: path)
    }

    /// A body's header fields, where each image record lies and where the bind-target table
    /// starts (`tail`): what a reader needs to read the records and the rest in the order, and
    /// on the threads, it chooses.
    package struct ImageIndex: Sendable {
        package let binding: ClosureBinding
        package let imageListHash: UInt64
        package let contentOnlyIdentity: Bool
        package let rootCount: Int
        /// The shared cache the closure binds into, read before the records: a launch starts
        /// mapping it while it reads them.
        package let sharedCache: ClosureSharedCache?
        package let records: [Range<Int>]
        package let tail: Int

        package func table(images: [ClosureImage]) -> ClosureImageTable {
            ClosureImageTable(self, images: images)
        }
    }

    /// Reads the body's header fields and finds its length-prefixed image records, decoding none.
    package static func readImageIndex(_ bytes: [UInt8], path: String) throws(ClosureError) -> ImageIndex {
        var r = ClosureReader(bytes, path: path)
        let binding = try ClosureBinding(parsing: &r)
        let imageListHash = try r.u64()
        let contentOnlyIdentity = try r.u8() != 0
        let rootCount = try r.int("root count")
        let sharedCache = try ClosureSharedCache.parse(&r)
        let imageCount = try r.count(of: "image", minimumSize: ClosureImage.minimumEncodedSize)
        guard rootCount >= 1, rootCount <= imageCount else { throw r.corrupt("root count \(rootCount) with \(imageCount) images") }
        // The roots are the host (when the binding names one), then the app: the fast path
        // finds the main image as root count − 1 and the host as image 0, so the two fields
        // must say the same thing.
        guard rootCount == binding.expectedRootCount else {
            throw r.corrupt("root count \(rootCount) disagrees with the binding, which names "
                + (binding.host.isEmpty ? "no host (1 root: the app)" : "a host (2 roots: host, app)"))
        }
        var recordRanges: [Range<Int>] = []
        recordRanges.reserveCapacity(imageCount)
        for _ in 0..<imageCount { recordRanges.append(try r.blobRange()) }
        return ImageIndex(binding: binding, imageListHash: imageListHash, contentOnlyIdentity: contentOnlyIdentity, rootCount: rootCount,
                          sharedCache: sharedCache, records: recordRanges, tail: r.position)
    }

    /// The closure of `table` and the rest of `body`, read from `tail` to its end.
    package init(table: ClosureImageTable, body bytes: [UInt8], tail: Int, path: String) throws(ClosureError) {
        binding = table.binding
        contentOnlyIdentity = table.contentOnlyIdentity
        rootCount = table.rootCount
        images = table.images
        let imageCount = images.count
        var r = ClosureReader(bytes, path: path)
        // The binding covers the image list: the paths the records name, in load order.
        guard ClosureBinding.imageListHash(images.map(\.path)) == table.imageListHash else {
            throw r.corrupt("the image paths are not the list the binding covers", at: 0)
        }
        r.position = tail
        let targetCount = try r.count(of: "bind target")
        let scanned = UnsafeBindTargetScan.scan(r.bytes[r.position...], count: targetCount, imageCount: imageCount)
        bindTargets = try BindTargetTable.parse(count: targetCount, from: &r, imageSizes: images.map(\.plan.vmSize), scanned: scanned)
        initializerOrder = []
        var ordered = [Bool](repeating: false, count: imageCount)
        for _ in 0..<(try r.count(of: "initializer order entry")) {
            let index = try r.int("initializer image")
            guard index < imageCount else { throw r.corrupt("initializer image \(index) is out of range") }
            // dyld runs an image's initializers once: a second entry would run them again.
            guard !ordered[index] else {
                throw r.corrupt("initializer order names image \(index) (\(images[index].path)) twice: its initializers would run twice")
            }
            ordered[index] = true
            initializerOrder.append(index)
        }
        entryOffset = nil
        if try r.u8() != 0 {
            let offset = try r.uleb()
            guard images[rootCount - 1].plan.isExecutable(offset) else { throw r.corrupt("entry point is not in an executable segment") }
            entryOffset = offset
        }
        missingWeakDylibs = try r.list(of: "missing weak dylib", minimumSize: ClosureMissingDylib.minimumEncodedSize) { (r) throws(ClosureError) in
            try ClosureMissingDylib(parsing: &r)
        }
        objc = try ClosureObjC(parsing: &r, images: images)
        threadLocals = try ClosureThreadLocals(parsing: &r, images: images)
        dlopens = try r.list(of: "dlopen closure", minimumSize: ClosureDlopen.minimumEncodedSize) { (r) throws(ClosureError) in
            try ClosureDlopen(parsing: &r)
        }
        sharedCache = table.sharedCache
        if sharedCache == nil, let image = images.first(where: { $0.cacheSlot != nil }) {
            throw r.corrupt("image \(image.path) lies in a shared cache the closure does not name")
        }
        guard r.atEnd else { throw r.corrupt("bytes after the closure body") }
    }

    /// The body's bytes: reproducible for the same closure.
    package func encodedBody() -> [UInt8] {
        var w = ClosureWriter()
        binding.encode(into: &w)
        w.u64(ClosureBinding.imageListHash(images.map(\.path)))
        w.u8(contentOnlyIdentity ? 1 : 0)
        w.uleb(rootCount)
        ClosureSharedCache.encode(sharedCache, into: &w)
        w.uleb(images.count)
        for image in images {
            var record = ClosureWriter()
            image.encode(into: &record)
            w.blob(record.bytes[...])
        }
        bindTargets.encode(into: &w)
        w.list(initializerOrder) { $0.uleb($1) }
        if let entryOffset { w.u8(1); w.uleb(entryOffset) } else { w.u8(0) }
        w.list(missingWeakDylibs) { $1.encode(into: &$0) }
        objc.encode(into: &w)
        threadLocals.encode(into: &w)
        w.list(dlopens) { $1.encode(into: &$0) }
        return w.bytes
    }
}
