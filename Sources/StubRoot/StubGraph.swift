import Foundation
import LaunchPlan
import LoaderCore
import MachOReader

/// One binary's dependency graph for one architecture as it will load once the stub root
/// exists, walked like `LoaderCore.DependencyGraph`, but an absolute install name found
/// nowhere becomes a stub node at its first candidate path. With an app layout, a dylib or
/// bundle is walked as loaded into the layout's host, and a relative install name found
/// nowhere becomes a stub at its first candidate inside the root other than the `usr/lib`
/// fallback (``appStubPath(_:installName:root:)``). Any other dependency found nowhere is
/// missing. Stubs of an earlier run count as absent, so that a rerun plans them again.
struct StubGraph {
    /// One image of the graph.
    enum Node {
        /// A file found on disk (the binary, a bundled dylib, a real library in the root).
        case image(ImageFile)
        /// A system library the stub root will provide.
        case stub(installName: String, path: String)
    }

    /// A dependent-dylib load command and the node it resolved to (nil: found nowhere and
    /// not stubbable).
    struct Edge {
        let dependency: MachOImage.Dependency, target: Int?
    }

    let arch: String
    private(set) var nodes: [Node] = []
    /// Per node, one edge per dependent dylib, in load-command order (none for stubs).
    private(set) var edges: [[Edge]] = []
    private(set) var missingDylibs: [MissingDylib] = []
    /// The node whose load command first brought each node in.
    private var loaders: [Int?] = []

    /// The host's rpath, searched last by every `@rpath` load (nil: no app host).
    private let hostRPath: PathResolver.RPath?
    /// Whether the binary is an `MH_EXECUTE` (its own main executable: no host).
    let binaryIsExecutable: Bool

    init(binary: String, arch: String, root: String, app: StubAppLayout?, files: inout StubRootFiles) throws(CommandFailure) {
        let binary = PathResolver.normalize(binary)
        self.arch = arch
        let main = try files.image(at: binary, arch: arch)
        binaryIsExecutable = main.image.header.fileType == .execute
        let hostedApp = binaryIsExecutable ? nil : app
        hostRPath = hostedApp.map { PathResolver.RPath(path: $0.hostRPath, declaringImageDirectory: PathResolver.directory(of: $0.hostPath)) }
        let resolver = PathResolver(root: root, executablePath: hostedApp?.hostPath ?? binary)
        var byPath: [String: Int] = [:]
        var byInstallName: [String: Int] = [:]
        func add(_ node: Node, path: String, installName: String?, loader: Int?) -> Int {
            let index = nodes.count
            nodes.append(node)
            edges.append([])
            loaders.append(loader)
            byPath[path] = index
            if let installName, byInstallName[installName] == nil { byInstallName[installName] = index }
            return index
        }

        _ = add(.image(main), path: binary, installName: main.image.id?.installName, loader: nil)
        var next = 0
        while next < nodes.count {
            defer { next += 1 }
            guard case let .image(file) = nodes[next] else { continue }
            var nodeEdges: [Edge] = []
            for dependency in file.image.dependencies {
                let name = dependency.installName
                if let existing = byInstallName[name] {
                    nodeEdges.append(Edge(dependency: dependency, target: existing))
                    continue
                }
                let candidates = resolver.candidates(
                    for: name, loaderDirectory: PathResolver.directory(of: file.path), rpaths: rpathChain(from: next))
                var target: Int?
                for candidate in candidates where try files.isRealImage(candidate) {
                    if let existing = byPath[candidate] { target = existing; break }
                    let found = try files.image(at: candidate, arch: arch)
                    guard found.image.header.fileType == .dylib else {
                        throw .load(.unusable(
                            path: candidate, reason: "is \(found.image.header.fileType), not a dylib (needed by \(file.path) as \(name))"))
                    }
                    target = add(.image(found), path: candidate, installName: found.image.id?.installName, loader: next)
                    break
                }
                if target == nil, let path = name.hasPrefix("/") ? candidates.first
                    : hostedApp == nil ? nil : Self.appStubPath(candidates, installName: name, root: root) {
                    if let existing = byPath[path] {
                        target = existing
                    } else {
                        target = add(.stub(installName: name, path: path), path: path, installName: name, loader: next)
                    }
                }
                if target == nil, dependency.kind != .weak {
                    missingDylibs.append(MissingDylib(installName: name, neededBy: file.path, arch: arch, tried: candidates))
                }
                nodeEdges.append(Edge(dependency: dependency, target: target))
            }
            edges[next] = nodeEdges
        }
    }

    /// The node library ordinal `ordinal` of node `index` names, when it resolved.
    func target(of ordinal: Int, in index: Int) -> Int? {
        guard ordinal >= 1, ordinal <= edges[index].count else { return nil }
        return edges[index][ordinal - 1].target
    }

    /// Where the stub of a relative install name goes: its first candidate inside the root
    /// that is not the `usr/lib` fallback (the app's own directories), or nil when none is
    /// (an `@loader_path` next to a binary outside the root: a stub cannot stand there).
    static func appStubPath(_ candidates: [String], installName: String, root: String) -> String? {
        let fallback = PathResolver.normalize(root + "/usr/lib/" + (installName as NSString).lastPathComponent)
        return candidates.first { $0 != fallback && PathResolver.relative($0, inside: root) != nil }
    }

    /// The rpaths `@rpath` searches for a load by `index`: its own, then its loader's, up
    /// to the binary's, then the app host's.
    private func rpathChain(from index: Int) -> [PathResolver.RPath] {
        var chain: [PathResolver.RPath] = []
        var visited = Set<Int>()
        var current: Int? = index
        while let node = current, visited.insert(node).inserted {
            if case let .image(file) = nodes[node] {
                let directory = PathResolver.directory(of: file.path)
                chain += file.image.rpaths.map { PathResolver.RPath(path: $0, declaringImageDirectory: directory) }
            }
            current = loaders[node]
        }
        if let hostRPath { chain.append(hostRPath) }
        return chain
    }
}

/// The files a stub-root plan reads, each read once: images by path and architecture,
/// and which paths hold stubs of an earlier run.
struct StubRootFiles {
    private var images: [String: ImageFile] = [:]
    private var realImages: [String: Bool] = [:]

    /// The slice for `arch` of the file at `path`.
    mutating func image(at path: String, arch: String) throws(CommandFailure) -> ImageFile {
        let key = arch + ":" + path
        if let known = images[key] { return known }
        let file: ImageFile
        do { file = try ImageFile.load(path: path, arch: arch) } catch { throw .load(error) }
        images[key] = file
        return file
    }

    /// Whether `path` holds a file that is not a stub of an earlier run (a stub carries
    /// the marker section in every slice).
    mutating func isRealImage(_ path: String) throws(CommandFailure) -> Bool {
        if let known = realImages[path] { return known }
        guard FileManager.default.fileExists(atPath: path) else {
            realImages[path] = false
            return false
        }
        guard let data = FileManager.default.contents(atPath: path) else { throw .load(.unusable(path: path, reason: "cannot read")) }
        var isStub = true
        do {
            let file = try UniversalFile(parsing: Array(data))
            for slice in file.slices where !(try file.image(slice).sections.contains(where: StubImageMarker.isMarker)) { isStub = false }
        } catch {
            throw .load(.malformed(error.inFile(path)))
        }
        realImages[path] = !isStub
        return !isStub
    }
}
