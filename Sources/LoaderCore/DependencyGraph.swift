import Foundation
import MachOReader

/// The images of one launch in load order, with their dependency edges: the main
/// executable (or host) first, then its dependencies breadth-first in load-command order,
/// as dyld loads them. Every file is loaded once, matched by install name and by path.
public struct DependencyGraph: Sendable {
    /// One loaded image.
    public struct Node: Sendable {
        public let file: ImageFile
        /// `LC_ID_DYLIB`, for dylibs.
        public let installName: String?
        /// One edge per dependent-dylib load command, in load-command order: library
        /// ordinal N is `dependencies[N - 1]`.
        public internal(set) var dependencies: [Edge]
        /// The node whose load command first brought this one in (nil for roots); its
        /// rpaths follow this node's when resolving `@rpath`.
        public let loader: Int?
        /// Candidate paths tried for this node's dependencies and found absent before a
        /// match (every candidate of a missing weak dylib), in the order they were tried: a
        /// file appearing at one of them would change what a launch loads.
        public internal(set) var absentCandidates: [String] = []

        public var path: String { file.path }
        public var image: MachOImage { file.image }
        /// Whether the image carries `MH_WEAK_DEFINES`: only such images take part in weak
        /// coalescing (dyld4 `Loader::hasWeakDefs`, dyld-852 `ImageLoaderMachO::hasCoalescedExports`).
        public var hasWeakDefs: Bool { file.image.header.flags.contains(.weakDefines) }
    }

    /// A dependency as named by a load command, and what it resolved to.
    public struct Edge: Equatable, Sendable {
        public let installName: String
        public let kind: DylibLinkKind
        /// The node index, or nil for a weak-linked dylib that is missing.
        public let target: Int?
    }

    /// A weak-linked dylib that was found nowhere (its binds read 0).
    public struct MissingWeakDylib: Equatable, Sendable {
        public let installName: String
        public let neededBy: String
        public let tried: [String]
    }

    public private(set) var nodes: [Node] = []
    public private(set) var missingWeakDylibs: [MissingWeakDylib] = []
    /// Number of `roots` (the host and the app, or just the app): the first nodes.
    public let rootCount: Int
    public let resolver: PathResolver
    /// Time spent reading and parsing image files while building the graph.
    public private(set) var parseNanoseconds: Int64 = 0

    /// Loads `roots` (a host executable first, if any, then the app) and everything they
    /// depend on, for `arch`, resolving absolute install names under `root`.
    public init(roots: [String], arch: String, root: String?) throws(LoadError) {
        precondition(!roots.isEmpty, "a launch has at least one image")
        resolver = PathResolver(root: root, executablePath: roots[0])
        rootCount = roots.count
        var index = LoadedIndex()
        for path in roots {
            let file = try timedLoad(PathResolver.normalize(path), arch: arch)
            index.add(file, as: nodes.count)
            nodes.append(Node(file: file, installName: file.image.id?.installName, dependencies: [], loader: nil))
        }
        var next = 0
        while next < nodes.count {
            try resolveDependencies(of: next, arch: arch, index: &index)
            next += 1
        }
    }

    private mutating func timedLoad(_ path: String, arch: String) throws(LoadError) -> ImageFile {
        let clock = ContinuousClock()
        let start = clock.now
        defer {
            let elapsed = clock.now - start
            parseNanoseconds += elapsed.components.seconds * 1_000_000_000 + elapsed.components.attoseconds / 1_000_000_000
        }
        return try ImageFile.load(path: path, arch: arch, root: resolver.root)
    }

    /// Loaded nodes by path and by install name.
    private struct LoadedIndex {
        var byPath: [String: Int] = [:]
        var byInstallName: [String: Int] = [:]

        mutating func add(_ file: ImageFile, as node: Int) {
            byPath[file.path] = node
            if let name = file.image.id?.installName, byInstallName[name] == nil { byInstallName[name] = node }
        }
    }

    private mutating func resolveDependencies(of index: Int, arch: String, index loaded: inout LoadedIndex) throws(LoadError) {
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
            let candidates = resolver.candidates(
                for: name, loaderDirectory: PathResolver.directory(of: node.path), rpaths: rpathChain(from: index))
            var found: Int?
            for candidate in candidates {
                guard FileManager.default.fileExists(atPath: candidate) else {
                    if !absent.contains(candidate) { absent.append(candidate) }
                    continue
                }
                if let existing = loaded.byPath[candidate] { found = existing; break }
                let file = try timedLoad(candidate, arch: arch)
                guard file.image.header.fileType == .dylib else {
                    throw .unusable(path: candidate, reason: "is \(file.image.header.fileType), not a dylib (needed by \(node.path) as \(name))")
                }
                found = nodes.count
                loaded.add(file, as: nodes.count)
                nodes.append(Node(file: file, installName: file.image.id?.installName, dependencies: [], loader: index))
                break
            }
            if found == nil {
                guard dependency.kind == .weak else {
                    throw .missingDylib(installName: name, neededBy: node.path, tried: candidates)
                }
                if !missingWeakDylibs.contains(where: { $0.installName == name }) {
                    missingWeakDylibs.append(MissingWeakDylib(installName: name, neededBy: node.path, tried: candidates))
                }
            }
            edges.append(Edge(installName: name, kind: dependency.kind, target: found))
        }
        nodes[index].dependencies = edges
        nodes[index].absentCandidates = absent
    }

    /// The rpaths `@rpath` searches for a load by `index`: its own, then its loader's, and
    /// so on up to a root, then the main executable's.
    func rpathChain(from index: Int) -> [PathResolver.RPath] {
        var chain: [PathResolver.RPath] = []
        var visited = Set<Int>()
        var current: Int? = index
        while let node = current, visited.insert(node).inserted {
            let directory = PathResolver.directory(of: nodes[node].path)
            chain += nodes[node].image.rpaths.map { PathResolver.RPath(path: $0, declaringImageDirectory: directory) }
            current = nodes[node].loader ?? (node == 0 ? nil : 0)
        }
        return chain
    }

    /// The node an image's library ordinal names: nil for a missing weak dylib.
    public func target(of ordinal: Int, in index: Int) -> Int? {
        let edges = nodes[index].dependencies
        guard ordinal >= 1, ordinal <= edges.count else { return nil }
        return edges[ordinal - 1].target
    }
}
