import LaunchPlan
import MachOReader

/// One image of a closure: identity, mapping plan, dependency edges, initializers, and its
/// fixups, resolved and encoded as runs (``FixupRuns``).
///
/// Encoding (a length-prefixed record, read whole): `path` string, `installName` string,
/// ``ImageIdentity``, `preferredBase` ULEB, `vmSize` ULEB, segment count + ``SegmentPlan``s,
/// dependency count + ``ClosureDependency``s, initializer count + ULEB offsets, rpath count +
/// strings, absent-path count + strings, `rebaseCount` ULEB + rebase runs blob, `bindCount` ULEB
/// + bind runs blob, fixup page index blob (``FixupPageIndex``), the cache slot (ULEB index + 1,
/// 0 for none, then the ULEB offset), the export trie (ULEB size, 0 for none, then the ULEB
/// offset from the image's base).
package struct ClosureImage: Equatable, Sendable {
    package var path: String
    package var identity: ImageIdentity
    package var plan: ImagePlan
    /// Install name, dependencies and rpaths, kept encoded until asked for.
    var linkage: ClosureLinkage
    /// The image's install name ("" for none).
    package var installName: String {
        get { linkage.installNameString }
        set { linkage.setInstallName(newValue) }
    }
    /// Dependencies in load-command order (decoded on each use).
    package var dependencies: [ClosureDependency] {
        get { linkage.decodedDependencies }
        set { linkage.setDependencies(newValue) }
    }
    /// The image's LC_RPATHs: inputs that affected path resolution (decoded on each use).
    package var rpaths: [String] {
        get { linkage.decodedRPaths }
        set { linkage.setRPaths(newValue) }
    }
    /// Initializer functions, as offsets from the image's base, in the order they run.
    package var initializers: [UInt64]
    /// Paths tried and found absent before each dependency was found (or all of a missing weak
    /// dylib's candidates): the closure is stale while any of them exists.
    package var absentPaths: [String]
    /// Encoded rebase runs and bind runs (decoded closures: slices of the body).
    package var rebaseRuns: ArraySlice<UInt8>
    package var bindRuns: ArraySlice<UInt8>
    package var rebaseCount: Int
    package var bindCount: Int
    package var fixupPageIndex: FixupPageIndex
    /// Where the image lies in the closure's shared cache; nil for an image mapped from its file.
    package var cacheSlot: CacheSlot?
    /// Where its export trie lies once mapped (offset from its base, size): what `dlsym` reads
    /// from memory, nothing parsed; nil without one.
    package var exportTrie: Range<UInt64>?

    package init(path: String, installName: String, identity: ImageIdentity, plan: ImagePlan, dependencies: [ClosureDependency],
                initializers: [UInt64], rpaths: [String], absentPaths: [String],
                rebaseRuns: ArraySlice<UInt8>, bindRuns: ArraySlice<UInt8>, rebaseCount: Int, bindCount: Int, fixupPageIndex: FixupPageIndex = .absent) {
        (self.path, self.identity, self.plan) = (path, identity, plan)
        linkage = ClosureLinkage(installName: installName, dependencies: dependencies, rpaths: rpaths)
        (self.initializers, self.absentPaths, self.rebaseRuns, self.bindRuns) = (initializers, absentPaths, rebaseRuns, bindRuns)
        (self.rebaseCount, self.bindCount, self.fixupPageIndex) = (rebaseCount, bindCount, fixupPageIndex)
    }

    static let minimumEncodedSize = 16

    /// Reads one image and checks what can be checked within it: segments inside the image and
    /// its file and not overlapping, a bounded address space, dependency targets among
    /// `imageCount` images, initializers inside executable segments.
    init(parsing r: inout ClosureReader, imageCount: Int) throws(ClosureError) {
        path = try r.string()
        let installName = try r.blob()
        identity = try ImageIdentity(parsing: &r)
        let preferredBase = try r.uleb()
        let vmSize = try r.uleb()
        let segmentStart = r.position
        let segmentCount = try r.count(of: "segment", minimumSize: SegmentPlan.minimumEncodedSize)
        var segments: [SegmentPlan] = []
        segments.reserveCapacity(segmentCount)
        for _ in 0..<segmentCount {
            let segment = try SegmentPlan(parsing: &r, imagePath: path, imageVMSize: vmSize, fileSize: identity.size)
            if let other = segments.first(where: { $0.overlaps(segment) }) {
                throw r.corrupt("segments \(other.name) and \(segment.name) of \(path) overlap", at: segmentStart)
            }
            segments.append(segment)
        }
        guard vmSize <= 1 << 40 else { throw r.corrupt("image \(path) claims \(vmSize) bytes of address space", at: segmentStart) }
        plan = ImagePlan(path: path, preferredBase: preferredBase, vmSize: vmSize, segments: segments)
        let dependencies = try ClosureLinkage.readDependencies(&r, imagePath: path, imageCount: imageCount)
        let initializerCount = try r.count(of: "initializer")
        initializers = []
        initializers.reserveCapacity(initializerCount)
        for _ in 0..<initializerCount { initializers.append(try r.uleb()) }
        linkage = ClosureLinkage(installName: installName, dependencies: dependencies, rpaths: try ClosureLinkage.readRPaths(&r))
        absentPaths = []
        for _ in 0..<(try r.count(of: "absent path")) { absentPaths.append(try r.string()) }
        rebaseCount = try r.int("rebase count")
        rebaseRuns = try r.blob()
        bindCount = try r.int("bind count")
        bindRuns = try r.blob()
        let indexStart = r.position
        fixupPageIndex = FixupPageIndex(bytes: try r.blob())
        do throws(ClosureError) {
            try fixupPageIndex.validate(plan: plan, rebaseRuns: rebaseRuns, bindRuns: bindRuns, path: path)
        } catch {
            guard case let .corrupt(_, offset, what) = error else { throw error }
            throw r.corrupt(what + " (index byte \(offset))", at: indexStart)
        }
        let slot = try r.int("cache slot")
        cacheSlot = slot == 0 ? nil : CacheSlot(index: slot - 1, offset: try r.uleb())
        let trieSize = try r.uleb()
        exportTrie = nil
        if trieSize > 0 {
            let start = try r.uleb()
            let (end, overflow) = start.addingReportingOverflow(trieSize)
            // Inside the file bytes of one readable segment: what a launch maps.
            guard !overflow, plan.segments.contains(where: { $0.protection.contains(.read) && start >= $0.vmOffset && end <= $0.vmOffset + $0.fileSize }) else {
                throw r.corrupt("the export trie of \(path) (+\(hex(start)), \(trieSize) bytes) is not inside one readable segment's file bytes")
            }
            exportTrie = start..<end
        }
        for offset in initializers where !plan.isExecutable(offset) {
            throw r.corrupt("initializer at offset \(hex(offset)) of \(path) is not in an executable segment")
        }
    }

    /// Reads the image records at `records` (ranges of `body`); the first error in record order.
    package static func parse(records: ArraySlice<Range<Int>>, of body: [UInt8], path: String, imageCount: Int) throws(ClosureError) -> [ClosureImage] {
        var images: [ClosureImage] = []
        images.reserveCapacity(records.count)
        for record in records {
            var r = ClosureReader(body[record], path: path)
            let image = try ClosureImage(parsing: &r, imageCount: imageCount)
            guard r.atEnd else { throw r.corrupt("bytes after the record of image \(image.path)") }
            images.append(consume image)
        }
        return images
    }

    /// Gives the record the runs of its fixups.
    package mutating func setRuns(rebases: FixupRuns.Encoded, binds: FixupRuns.Encoded) {
        (rebaseRuns, rebaseCount) = (rebases.bytes[...], rebases.count)
        (bindRuns, bindCount) = (binds.bytes[...], binds.count)
        fixupPageIndex = FixupPageIndex(rebases: rebases.pages, binds: binds.pages)
    }

    /// The record with no fixups: empty run streams (each its run count, 0), no page index entries.
    package func withoutFixups() -> ClosureImage {
        var image = self
        (image.rebaseRuns, image.bindRuns, image.rebaseCount, image.bindCount) = ([0], [0], 0, 0)
        image.fixupPageIndex = FixupPageIndex(rebases: [], binds: [])
        return image
    }

    func encode(into w: inout ClosureWriter) {
        w.string(path)
        w.blob(linkage.installName)
        identity.encode(into: &w)
        for value in [plan.preferredBase, plan.vmSize, UInt64(plan.segments.count)] { w.uleb(value) }
        for segment in plan.segments { segment.encode(into: &w) }
        w.raw(linkage.dependencies)
        w.list(initializers) { $0.uleb($1) }
        w.raw(linkage.rpaths)
        w.list(absentPaths) { $0.string($1) }
        w.uleb(rebaseCount)
        w.blob(rebaseRuns)
        w.uleb(bindCount)
        w.blob(bindRuns)
        w.blob(fixupPageIndex.bytes)
        w.uleb(cacheSlot.map { $0.index + 1 } ?? 0)
        if let cacheSlot { w.uleb(cacheSlot.offset) }
        w.uleb(UInt64(exportTrie?.count ?? 0))
        if let exportTrie, !exportTrie.isEmpty { w.uleb(exportTrie.lowerBound) }
    }
}
