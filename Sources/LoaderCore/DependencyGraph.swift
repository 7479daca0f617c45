import Foundation
import MachOReader
import LaunchPlan

/// The images of one launch in load order, with their dependency edges: the roots (the main
/// executable, or the host then the app) first, then dyld's order: an image's dependencies in
/// load-command order, then each one's own, depth first (dyld-852 `recursiveLoadLibraries`,
/// dyld4 `JustInTimeLoader::loadDependents`; docs/dyld-rules.md, rule 6). Every file is
/// loaded once, matched by install name and by path.
package struct DependencyGraph: Sendable {
    package struct Node: Sendable {
        package let file: ImageFile
        /// `LC_ID_DYLIB`, for dylibs.
        package let installName: String?
        /// One edge per dependent-dylib load command, in load-command order: library
        /// ordinal N is `dependencies[N - 1]`.
        package internal(set) var dependencies: [Edge]
        /// The node whose load command first brought this one in (nil for roots): its rpaths follow this node's.
        package let loader: Int?
        /// Candidate paths tried for this node's dependencies and found absent, in order: a
        /// file appearing at one of them would change what a launch loads.
        package internal(set) var absentCandidates: [String] = []
        /// Where the image lies in the shared cache's region (its mach header's offset), when
        /// it was taken from the cache: no file was opened, its Mach-O is the cache's.
        package internal(set) var cacheOffset: UInt64?

        package var path: String { file.path }
        package var image: MachOImage { file.image }
        /// `MH_WEAK_DEFINES`: only such images take part in weak coalescing (dyld4 `Loader::hasWeakDefs`).
        package var hasWeakDefs: Bool { file.image.header.flags.contains(.weakDefines) }
    }

    /// A dependency as named by a load command, and what it resolved to.
    package struct Edge: Equatable, Sendable {
        package let installName: String
        package let kind: DylibLinkKind
        /// The node index, or nil for a weak-linked dylib that is missing.
        package let target: Int?

        package init(installName: String, kind: DylibLinkKind, target: Int?) {
            (self.installName, self.kind, self.target) = (installName, kind, target)
        }
    }

    /// A weak-linked dylib that was found nowhere (its binds read 0).
    package struct MissingWeakDylib: Equatable, Sendable {
        package let installName: String
        package let neededBy: String
        package let tried: [String]

        package init(installName: String, neededBy: String, tried: [String]) {
            (self.installName, self.neededBy, self.tried) = (installName, neededBy, tried)
        }
    }

    package private(set) var nodes: [Node] = []
    package private(set) var missingWeakDylibs: [MissingWeakDylib] = []
    /// Number of `roots` (the host and the app, or just the app): the first nodes.
    package let rootCount: Int
    /// Number of inserted libraries (`DYLD_INSERT_LIBRARIES`): the nodes right after the roots.
    package let insertedCount: Int
    package var inserted: Range<Int> { rootCount..<(rootCount + insertedCount) }
    /// Per node, whether it is loaded at launch (the main executable, the inserted libraries
    /// and what they load; not an image loaded into a host): interposing counts only there.
    package private(set) var loadedAtLaunch: [Bool] = []
    package let resolver: PathResolver
    /// Time spent reading and parsing image files while building the graph.
    package private(set) var parseNanoseconds: Int64 = 0
    /// `stat`s of candidate paths and search directories the path search made (each at most once).
    package var pathProbes: Int { probes.count }
    private var probes = PathProbes()
    /// Per node, its rpaths expanded once, and the node whose rpaths `@rpath` searches next:
    /// its loader, or for a root the main executable (-1 after that).
    private var searchDirectories: [[SearchDirectory]] = []
    private var searchParents: [Int] = []
    /// Absent paths already recorded on some node: each is recorded once per launch.
    private var recordedAbsent = Set<String>()
    /// The loaded nodes by path and install name.
    private var loaded = LoadedIndex()
    /// The shared cache the launch takes the dylibs it holds from (nil once ``forgetCache()``).
    package private(set) var cache: CachedDylibs?
    /// While a recorded graph is loaded again: its images.
    private var recorded: [RecordedImage]?

    /// An image of a launch as its closure recorded it (``init(recorded:rootCount:insertedCount:missingWeakDylibs:arch:root:)``).
    package struct RecordedImage {
        package var path: String
        /// Its edges, in load-command order.
        package var dependencies: [Edge]
        /// The candidate paths its dependencies were found absent at.
        package var absent: [String]
        /// Its memory as the launch mapped it, when all of it can be read
        /// (``ImageFile/readableExtent(_:)``), and its slice's offset in the file.
        package var mapped: (bytes: ByteView, sliceOffset: Int)?

        package init(path: String, dependencies: [Edge], absent: [String], mapped: (bytes: ByteView, sliceOffset: Int)?) {
            (self.path, self.dependencies, self.absent, self.mapped) = (path, dependencies, absent, mapped)
        }
    }

    /// Loads `roots` (a host executable first, if any), then the `inserted` libraries
    /// (`DYLD_INSERT_LIBRARIES`), then the roots' dependencies, then each inserted library's
    /// (dyld4 `prepare`), for `arch`, absolute install names under `root`. A dependency whose
    /// install name `cache` holds is taken from the cache, as dyld2 takes a dylib from the
    /// shared cache before looking for its file.
    package init(roots: [String], inserted: [String] = [], arch: String, root: String?, cache: CachedDylibs? = nil) throws(LoadError) {
        precondition(!roots.isEmpty, "a launch has at least one image")
        self.cache = cache
        resolver = PathResolver(root: root, executablePath: roots[0])
        rootCount = roots.count
        insertedCount = inserted.count
        if !inserted.isEmpty, roots.count > 1 {
            throw .unusable(path: roots[roots.count - 1], reason: "is loaded into a host as dlopen loads it: libraries can be inserted only into a launch of an executable")
        }
        for path in roots { append(try timedLoad(PathResolver.normalize(path), arch: arch), loader: nil) }
        for path in inserted {
            let file = try timedLoad(PathResolver.normalize(path), arch: arch)
            guard file.image.header.fileType == .dylib else {
                throw .unusable(path: file.path, reason: "is \(file.image.header.fileType), not a dylib: only dylibs can be inserted")
            }
            if let existing = loaded.byPath[file.path] ?? file.image.id.flatMap({ loaded.byInstallName[$0.installName] }) {
                throw .unusable(path: file.path, reason: "is inserted twice, or is also \(nodes[existing].path)")
            }
            append(file, loader: nil)
        }
        try loadDependentsOfRoots(arch: arch)
    }

    /// The graph a launch closure recorded, loaded again (for a `dlopen` after that launch):
    /// each image parsed where the launch mapped it when its layout allows, else from the path
    /// the closure resolved it to (the file the launch checked and mapped), in the closure's
    /// order; each image's edges as recorded, walked in dyld's order as a launch walks them.
    /// No path is searched. `missingWeakDylibs`: the weak dylibs the launch found nowhere.
    package init(recorded images: [RecordedImage], rootCount: Int, insertedCount: Int,
                 missingWeakDylibs: [MissingWeakDylib], arch: String, root: String?) throws(LoadError) {
        precondition(images.count >= rootCount + insertedCount && rootCount > 0, "a launch has at least one image")
        cache = nil
        resolver = PathResolver(root: root, executablePath: images[0].path)
        (self.rootCount, self.insertedCount, self.missingWeakDylibs) = (rootCount, insertedCount, missingWeakDylibs)
        recorded = images
        for index in 0..<(rootCount + insertedCount) { append(try loadRecorded(index, arch: arch), loader: nil) }
        try loadDependentsOfRoots(arch: arch)
        recorded = nil
        guard nodes.count == images.count else {
            throw .unusable(path: images[0].path, reason: "has a closure whose image graph is inconsistent: \(images.count) images recorded, \(nodes.count) reached")
        }
        for absent in images.map(\.absent) { recordedAbsent.formUnion(absent) }
    }

    /// Takes nothing from the shared cache from now on (a launch that mapped none of it:
    /// its `dlopen`s load from the files).
    package mutating func forgetCache() { cache = nil }

    /// The roots' and inserted libraries' dependencies, each root's in turn (dyld4 `prepare`).
    private mutating func loadDependentsOfRoots(arch: String) throws(LoadError) {
        var reached = [Bool](repeating: false, count: nodes.count)
        // Roots after the first are loaded into it later, as dlopen loads them.
        loadedAtLaunch = nodes.indices.map { $0 == 0 || $0 >= rootCount }
        for root in 0..<(rootCount + insertedCount) where !reached[root] {
            defer { loadedAtLaunch += repeatElement(root == 0 || root >= rootCount, count: nodes.count - loadedAtLaunch.count) }
            try loadDependents(of: root, arch: arch, reached: &reached, cache: cache)
        }
    }

    /// `dlopen(path)` after the launch: the node `path` names and the nodes it added, in dyld's
    /// order (none when already loaded under that install name or path, as dyld matches both).
    /// `path` resolves as a dependency of the main executable would; a dylib the launch's
    /// shared cache holds under that install name, and every dependency it holds, is taken
    /// from it as the launch takes one. On an error the graph may hold part of the load: work
    /// on a copy and keep it only when the `dlopen` succeeded.
    package mutating func open(_ path: String, arch: String) throws(LoadError) -> (node: Int, added: Range<Int>) {
        let first = nodes.count
        guard path.hasPrefix("/") || path.hasPrefix("@") else {
            throw .unusable(path: path, reason: "is a relative path: dlopen takes an absolute path or one starting with @executable_path, @loader_path or @rpath")
        }
        if let existing = loaded.byInstallName[path] { return (existing, first..<first) }
        if let cache, let headerOffset = cache.headerOffsets[path] {
            let node = try takeFromCache(cache, installName: path, headerOffset: headerOffset, loader: nil, neededBy: "dlopen")
            guard node == first else { return (node, first..<first) }
        } else {
            var walk = CandidateWalk(installName: path, from: 0, resolver: resolver)
            while let (candidate, _) = walk.next(in: self) {
                if let existing = loaded.byPath[candidate] { return (existing, first..<first) }
                guard probes.exists(candidate) else { continue }
                let file = try timedLoad(candidate, arch: arch)
                switch file.image.header.fileType {
                case .dylib, .bundle: break
                default: throw .unusable(path: candidate, reason: "is \(file.image.header.fileType): dlopen loads dylibs and bundles")
                }
                if let existing = loaded.byPath[file.path] { return (existing, first..<first) }
                append(file, loader: nil)
                break
            }
            guard nodes.count > first else {
                throw .missingDylib(installName: path, neededBy: "dlopen", tried: candidates(for: path, from: 0))
            }
        }
        var reached = [Bool](repeating: true, count: first) + [false]
        try loadDependents(of: first, arch: arch, reached: &reached, cache: cache)
        loadedAtLaunch += repeatElement(false, count: nodes.count - loadedAtLaunch.count)
        return (first, first..<nodes.count)
    }

    /// dyld's recursion as a walk with an explicit stack (a graph thousands deep controls no
    /// recursion depth): a node's dependencies resolved when first reached, then each entered
    /// in load-command order; a node already reached is not entered again (cycles end there).
    private mutating func loadDependents(of root: Int, arch: String, reached: inout [Bool], cache: CachedDylibs?) throws(LoadError) {
        var stack: [(node: Int, nextEdge: Int)] = [(root, 0)]
        reached[root] = true
        try resolveDependencies(of: root, arch: arch, cache: cache)
        reached += repeatElement(false, count: nodes.count - reached.count)
        while let top = stack.last {
            let edges = nodes[top.node].dependencies
            var edge = top.nextEdge
            while edge < edges.count, edges[edge].target.map({ reached[$0] }) ?? true { edge += 1 }
            guard edge < edges.count, let child = edges[edge].target else {
                stack.removeLast()
                continue
            }
            stack[stack.count - 1].nextEdge = edge + 1
            reached[child] = true
            try resolveDependencies(of: child, arch: arch, cache: cache)
            reached += repeatElement(false, count: nodes.count - reached.count)
            stack.append((child, 0))
        }
    }

    /// `body`'s result, its time counted in ``parseNanoseconds``.
    private mutating func timed<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        let start = ContinuousClock.now
        defer { parseNanoseconds += PhaseClock.nanoseconds(ContinuousClock.now - start) }
        return try body()
    }

    private mutating func timedLoad(_ path: String, arch: String) throws(LoadError) -> ImageFile {
        let root = resolver.root
        return try timed { () throws(LoadError) in try ImageFile.load(path: path, arch: arch, root: root) }
    }

    /// Recorded image `index`: parsed where the launch mapped it, else from its file. An image
    /// with interposing tuples is read from its file: its tuples are found through its fixup
    /// chains, which the launch has overwritten in its memory.
    private mutating func loadRecorded(_ index: Int, arch: String) throws(LoadError) -> ImageFile {
        let image = recorded![index]
        if let mapped = image.mapped, let file = timed({ () -> ImageFile? in
            guard let file = try? ImageFile.asMapped(path: image.path, sliceOffset: mapped.sliceOffset, bytes: mapped.bytes),
                  file.image.header.cpu.matches(arch), !file.image.segments.contains(where: { $0.sections.contains(where: \.holdsInterposingTuples) })
            else { return nil }
            return file
        }) {
            return file
        }
        return try timedLoad(image.path, arch: arch)
    }

    private struct LoadedIndex {
        var byPath: [String: Int] = [:]
        var byInstallName: [String: Int] = [:]

        mutating func add(_ file: ImageFile, as node: Int) {
            byPath[file.path] = node
            if let name = file.image.id?.installName, byInstallName[name] == nil { byInstallName[name] = node }
        }
    }

    /// One rpath of a loaded image, `@executable_path`/`@loader_path`-expanded, and its directory's id in `probes`.
    private struct SearchDirectory {
        let expanded: String
        let directory: Int
    }

    private mutating func append(_ file: ImageFile, loader: Int?, cacheOffset: UInt64? = nil) {
        loaded.add(file, as: nodes.count)
        searchParents.append(loader ?? (nodes.isEmpty ? -1 : 0))
        nodes.append(Node(file: file, installName: file.image.id?.installName, dependencies: [], loader: loader, cacheOffset: cacheOffset))
        let directory = PathResolver.directory(of: file.path)
        searchDirectories.append(file.image.rpaths.map { rpath in
            let expanded = resolver.expand(rpath, loaderDirectory: directory)
            return SearchDirectory(expanded: expanded, directory: probes.directoryID(resolver.confined(expanded)))
        })
    }

    private mutating func resolveDependencies(of index: Int, arch: String, cache: CachedDylibs?) throws(LoadError) {
        if let recorded { return try takeRecordedDependencies(of: index, from: recorded, arch: arch) }
        let node = nodes[index]
        var edges: [Edge] = []
        var absent: [String] = []
        for dependency in node.image.dependencies {
            let name = dependency.installName
            // Install-name matching first: a dylib already loaded under that name is reused.
            if let existing = loaded.byInstallName[name] {
                edges.append(Edge(installName: name, kind: dependency.kind, target: existing))
                continue
            }
            // Then the shared cache: its image, at the path its file would have (the same
            // file reached another way is the loaded one).
            if let cache, let headerOffset = cache.headerOffsets[name] {
                let target = try takeFromCache(cache, installName: name, headerOffset: headerOffset, loader: index, neededBy: node.path)
                edges.append(Edge(installName: name, kind: dependency.kind, target: target))
                continue
            }
            var found: Int?
            var walk = CandidateWalk(installName: name, from: index, resolver: resolver)
            while let (candidate, directory) = walk.next(in: self) {
                if let existing = loaded.byPath[candidate] {
                    found = existing
                    break
                }
                guard probes.exists(candidate) else {
                    if recordedAbsent.insert(candidate).inserted { absent.append(candidate) }
                    if let directory, let missing = probes.settleAbsentDirectory(directory), recordedAbsent.insert(missing).inserted {
                        absent.append(missing)
                    }
                    continue
                }
                let file = try timedLoad(candidate, arch: arch)
                guard file.image.header.fileType == .dylib else {
                    throw .unusable(path: candidate, reason: "is \(file.image.header.fileType), not a dylib (needed by \(node.path) as \(name))")
                }
                if let existing = loaded.byPath[file.path] {  // the same file through a symlink
                    found = existing
                } else {
                    found = nodes.count
                    append(file, loader: index)
                }
                break
            }
            if found == nil {
                let tried = candidates(for: name, from: index)
                guard dependency.kind == .weak else {
                    throw .missingDylib(installName: name, neededBy: node.path, tried: tried)
                }
                if !missingWeakDylibs.contains(where: { $0.installName == name }) {
                    missingWeakDylibs.append(MissingWeakDylib(installName: name, neededBy: node.path, tried: tried))
                }
            }
            edges.append(Edge(installName: name, kind: dependency.kind, target: found))
        }
        nodes[index].dependencies = edges
        nodes[index].absentCandidates = absent
    }

    /// The node of the dylib `installName` the shared cache holds with its mach header at
    /// `headerOffset`: the one loaded at the path its file would have, else a new node parsed
    /// where it lies in the cache (`loader` loads it; `neededBy` names who, for a refusal).
    private mutating func takeFromCache(_ cache: CachedDylibs, installName: String, headerOffset: Int, loader: Int?,
                                        neededBy: String) throws(LoadError) -> Int {
        let path = resolver.underRoot(installName)
        if let existing = loaded.byPath[path] { return existing }
        // Parsed where it lies (``MachOImage/init(parsingInCache:headerOffset:)``).
        let file = try timed { () throws(LoadError) in
            ImageFile(path: path, sliceOffset: 0, image: try LoadError.reading(cache.path) { () throws(MachOError) in
                try MachOImage(parsingInCache: cache.view, headerOffset: headerOffset)
            })
        }
        guard file.image.header.fileType == .dylib, file.image.id?.installName == installName else {
            throw .unusable(path: cache.path, reason: "its image at 0x\(String(headerOffset, radix: 16)) is not the dylib \(installName) (needed by \(neededBy))")
        }
        append(file, loader: loader, cacheOffset: UInt64(headerOffset))
        return nodes.count - 1
    }

    /// ``resolveDependencies(of:arch:cache:)`` as `recorded` says: each edge's target as
    /// recorded, a target not loaded yet loaded from its recorded path (it is the next node, as
    /// when the launch resolved it), and its absent candidates.
    private mutating func takeRecordedDependencies(of index: Int, from recorded: [RecordedImage],
                                                   arch: String) throws(LoadError) {
        let edges = recorded[index].dependencies
        guard edges.map(\.installName) == nodes[index].image.dependencies.map(\.installName) else {
            throw .unusable(path: nodes[index].path, reason: "no longer names the dependencies its launch closure recorded")
        }
        for edge in edges {
            guard let target = edge.target else { continue }
            if target == nodes.count, target < recorded.count {
                append(try loadRecorded(target, arch: arch), loader: index)
            } else if target > nodes.count || target >= recorded.count {
                throw .unusable(path: nodes[index].path, reason: "has a closure whose image graph is inconsistent: an edge to image \(target) of \(recorded.count)")
            }
        }
        nodes[index].dependencies = edges
        nodes[index].absentCandidates = recorded[index].absent
    }

    /// The candidate paths for one install name needed by one node, one at a time in
    /// `PathResolver.candidates`' order, so an early find builds no further paths. Each
    /// `@rpath` candidate comes with its rpath directory's id; one under a directory known
    /// absent is skipped unbuilt (the directory is already among the absent paths), unless
    /// the walk lists every candidate (``candidates(for:from:)``).
    private struct CandidateWalk {
        let installName: String
        /// What follows `@rpath/`, or nil for any other install name.
        let rpathRest: String?
        /// Whether `rpathRest` stays inside its rpath directory (no `.` or `..`).
        let staysInside: Bool
        var skipsAbsent = true
        let fallback: String
        /// The node whose load command names the dylib.
        let start: Int
        var tried = Set<String>()
        var node: Int?
        var nextRPath = 0
        var direct = true
        var done = false

        init(installName: String, from index: Int, resolver: PathResolver) {
            self.installName = installName
            start = index
            fallback = resolver.underRoot("/usr/lib/" + (installName as NSString).lastPathComponent)
            if installName.hasPrefix("@rpath/") {
                let rest = String(installName.dropFirst("@rpath/".count))
                rpathRest = rest
                staysInside = !rest.split(separator: "/").contains { $0 == ".." || $0 == "." }
                node = index
            } else {
                rpathRest = nil
                staysInside = false
            }
        }

        mutating func next(in graph: DependencyGraph) -> (path: String, directory: Int?)? {
            guard !done else { return nil }
            if let rest = rpathRest {
                while let current = node {
                    let searches = graph.searchDirectories[current]
                    while nextRPath < searches.count {
                        let search = searches[nextRPath]
                        nextRPath += 1
                        if staysInside && skipsAbsent && graph.probes.isKnownAbsent(search.directory) { continue }
                        let candidate = graph.resolver.confined(search.expanded + "/" + rest)
                        guard tried.insert(candidate).inserted else { continue }
                        return (candidate, staysInside ? search.directory : nil)
                    }
                    nextRPath = 0
                    let parent = graph.searchParents[current]
                    node = parent < 0 ? nil : parent
                }
            } else if direct {
                direct = false
                let loaderDirectory = PathResolver.directory(of: graph.nodes[start].path)
                let candidate = installName.hasPrefix("@")
                    ? graph.resolver.confined(graph.resolver.expand(installName, loaderDirectory: loaderDirectory))
                    : graph.resolver.underRoot(installName)
                tried.insert(candidate)
                return (candidate, nil)
            }
            // DYLD_FALLBACK_LIBRARY_PATH's last entry: the root's /usr/lib, by leaf name.
            done = true
            return tried.contains(fallback) ? nil : (fallback, nil)
        }
    }

    /// Every candidate path for `installName` needed by node `index`, none skipped: an error's tried paths.
    func candidates(for installName: String, from index: Int) -> [String] {
        var walk = CandidateWalk(installName: installName, from: index, resolver: resolver)
        walk.skipsAbsent = false
        var paths: [String] = []
        while let (path, _) = walk.next(in: self) { paths.append(path) }
        return paths
    }

    /// The node an image's library ordinal names: nil for a missing weak dylib.
    package func target(of ordinal: Int, in index: Int) -> Int? {
        let edges = nodes[index].dependencies
        guard ordinal >= 1, ordinal <= edges.count else { return nil }
        return edges[ordinal - 1].target
    }
}

/// Dylibs a launch takes from a dyld shared cache rather than from their files: the cache's
/// bytes as mapped, and by install name where each image's mach header lies in them (its
/// offset in the cache's region: the cache keeps every mapping at its region offset).
package struct CachedDylibs: Sendable {
    package let path: String
    package let view: ByteView
    package let headerOffsets: [String: Int]

    package init(path: String, view: ByteView, headerOffsets: [String: Int]) {
        (self.path, self.view, self.headerOffsets) = (path, view, headerOffsets)
    }
}
