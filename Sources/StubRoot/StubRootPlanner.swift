import LaunchPlan
import LoaderCore
import MachOReader

extension StubRootPlan {
    /// Plans the stub root at `root` for `binaries`: each binary's graph is walked for
    /// every architecture the binary has (only those of `arches`, when given), then every
    /// import of every image is resolved the way dyld resolves it:
    ///
    /// - ordinal 1...N: in the dylib the ordinal names, following re-exports; a stub
    ///   reached that way exports the symbol (so a symbol imported from an umbrella is
    ///   exported by the umbrella's stub);
    /// - ordinal 0: in the image itself; -1: in the main executable (the binary when it is
    ///   an executable, else the host);
    /// - -2 (flat lookup): in every image of the graph, in load order, stubs included with
    ///   what the two-level imports made them export; found nowhere, the host exports it;
    /// - -3 (weak lookup): the same, but found nowhere it stays with the image's own
    ///   definition, as weak coalescing allows.
    ///
    /// Whatever none of these provides is listed in ``unresolved``.
    ///
    /// When a graph links a relative install name (`@rpath/...`, `@executable_path/...`)
    /// found nowhere, the plan is made again with an app host (``StubAppLayout``, iOS or
    /// macOS after the binaries' platform) that provides it, as the app would.
    package init(binaries: [String], arches: [String]?, root: String) throws(CommandFailure) {
        let root = PathResolver.normalize(root)
        var planner = try StubRootPlanner.planned(binaries: binaries, arches: arches, root: root, app: nil)
        if planner.needsAppHost {
            let app = StubAppLayout(root: root, platform: planner.platform ?? .macOS)
            planner = try StubRootPlanner.planned(binaries: binaries, arches: arches, root: root, app: app)
        }
        self = planner.plan()
    }
}

/// The state of planning: the graphs, what each stub must export so far, and the host.
private struct StubRootPlanner {
    let root: String
    private var files = StubRootFiles()
    private var graphs: [StubGraph] = []
    private var importsByImage: [String: [SymbolImport]] = [:]
    private var tries: [String: ExportTrie?] = [:]
    /// Stub install names and versions, by stub path.
    private var stubFiles: [String: StubFile] = [:]
    /// What each stub slice exports: name → weak definition.
    private var stubExports: [StubSliceKey: [String: Bool]] = [:]
    private var hostExports: [String: Set<String>] = [:]
    private var flatImports: [(graph: Int, entry: SymbolImport)] = []
    private var unresolved: [UnresolvedImport] = []
    private var seenUnresolved = Set<UnresolvedImport>()
    private var missingDylibs: [MissingDylib] = []
    /// Stub slices that link the runtime's stub (``linkRuntime()``).
    private var runtimeLinks = Set<StubSliceKey>()

    private struct StubFile {
        let installName: String
        var currentVersion: UInt32, compatibilityVersion: UInt32
    }

    private struct StubSliceKey: Hashable {
        let path: String, arch: String
    }

    /// Where a lookup found a symbol: the node, and the name it has there (a re-export may
    /// rename it).
    private typealias Found = (node: Int, name: String)

    /// The app host the graphs are loaded into, if any.
    let app: StubAppLayout?
    /// The binaries' platform (nil before the first graph).
    private(set) var platform: StubPlatform?

    /// A planner that has walked every graph and resolved every import.
    static func planned(binaries: [String], arches: [String]?, root: String, app: StubAppLayout?) throws(CommandFailure) -> StubRootPlanner {
        var planner = StubRootPlanner(root: root, app: app)
        for binary in binaries {
            for arch in try planner.architectures(of: binary, wanted: arches) { try planner.addGraph(binary: binary, arch: arch) }
        }
        try planner.resolveTwoLevelImports()
        try planner.resolveFlatImports()
        try planner.linkRuntime()
        return planner
    }

    /// Whether a dylib or bundle links a relative install name found nowhere, which an
    /// app host would provide.
    var needsAppHost: Bool {
        app == nil && missingDylibs.contains { missing in
            !missing.installName.hasPrefix("/")
                && graphs.contains { $0.arch == missing.arch && !$0.binaryIsExecutable }
        }
    }

    /// The architectures of `binary` to plan for, sorted.
    func architectures(of binary: String, wanted: [String]?) throws(CommandFailure) -> [String] {
        let available: [String]
        do { available = try ImageFile.architectures(path: binary) } catch { throw .load(error) }
        let selected = Set(available.filter { wanted?.contains($0) ?? true }).sorted()
        guard !selected.isEmpty else { throw .noArchitecture(binary: binary, wanted: wanted ?? [], available: available) }
        return selected
    }

    mutating func addGraph(binary: String, arch: String) throws(CommandFailure) {
        let graph = try StubGraph(binary: binary, arch: arch, root: root, app: app, files: &files)
        if case let .image(file) = graph.nodes[0] {
            let found = try StubPlatform.of(file.image, binary: file.path, arch: arch)
            if let platform, platform != found { throw .mixedPlatforms(binary: file.path, arch: arch, platform: found.rawValue, others: platform.rawValue) }
            platform = found
        }
        if hostExports[arch] == nil { hostExports[arch] = [] }
        for case let .stub(installName, path) in graph.nodes {
            if stubFiles[path] == nil { stubFiles[path] = StubFile(installName: installName, currentVersion: 0, compatibilityVersion: 0) }
            let key = StubSliceKey(path: path, arch: arch)
            if stubExports[key] == nil { stubExports[key] = [:] }
        }
        for edge in graph.edges.joined() {
            guard let target = edge.target, case let .stub(_, path) = graph.nodes[target], var file = stubFiles[path] else { continue }
            file.currentVersion = max(file.currentVersion, edge.dependency.command.currentVersion)
            file.compatibilityVersion = max(file.compatibilityVersion, edge.dependency.command.compatibilityVersion)
            stubFiles[path] = file
        }
        for missing in graph.missingDylibs where !missingDylibs.contains(missing) { missingDylibs.append(missing) }
        graphs.append(graph)
    }

    /// Binds every import that names a library ordinal of 1 or more, 0 or -1, making stubs
    /// export what is looked up in them; flat and weak lookups are kept for later.
    mutating func resolveTwoLevelImports() throws(CommandFailure) {
        for g in graphs.indices {
            let graph = graphs[g]
            for (index, node) in graph.nodes.enumerated() {
                guard case let .image(file) = node else { continue }
                let entries = try imports(of: file, arch: graph.arch)
                let coalesced = Set(entries.lazy.filter { $0.libraryOrdinal == BindFixup.ordinalWeakLookup }.map(\.name))
                for entry in entries {
                    switch entry.libraryOrdinal {
                    case 1...:
                        let edges = graph.edges[index]
                        guard entry.libraryOrdinal <= edges.count else {
                            note(entry, of: file.path, arch: graph.arch,
                                 expectedIn: "library ordinal \(entry.libraryOrdinal) (the image has \(edges.count) dependencies)")
                            continue
                        }
                        // A dependency found nowhere is weak-linked (its binds read 0) or
                        // already listed as missing.
                        guard let target = edges[entry.libraryOrdinal - 1].target else { continue }
                        let bound = try bind(entry.name, in: target, graph: g, weakDefinition: coalesced.contains(entry.name))
                        if !bound, !entry.isWeakImport {
                            note(entry, of: file.path, arch: graph.arch, expectedIn: edges[entry.libraryOrdinal - 1].dependency.installName)
                        }
                    case BindFixup.ordinalSelf:
                        if try locate(entry.name, in: index, graph: g) == nil, !entry.isWeakImport {
                            note(entry, of: file.path, arch: graph.arch, expectedIn: "this image")
                        }
                    case BindFixup.ordinalMainExecutable:
                        if case let .image(main) = graph.nodes[0], main.image.header.fileType == .execute {
                            if try locate(entry.name, in: 0, graph: g) == nil, !entry.isWeakImport {
                                note(entry, of: file.path, arch: graph.arch, expectedIn: "the main executable \(main.path)")
                            }
                        } else {
                            hostExports[graph.arch, default: []].insert(entry.name)
                        }
                    case BindFixup.ordinalFlatLookup, BindFixup.ordinalWeakLookup: flatImports.append((g, entry))
                    default:
                        note(entry, of: file.path, arch: graph.arch, expectedIn: "unknown special library ordinal \(entry.libraryOrdinal)")
                    }
                }
            }
        }
    }

    /// Looks every flat and weak lookup up in the images of its graph, stubs exporting
    /// what the two-level imports gave them; flat lookups found nowhere go to the host.
    mutating func resolveFlatImports() throws(CommandFailure) {
        for (g, entry) in flatImports {
            var found = false
            for index in graphs[g].nodes.indices where !found { found = try locate(entry.name, in: index, graph: g) != nil }
            if !found, entry.libraryOrdinal == BindFixup.ordinalFlatLookup { hostExports[graphs[g].arch, default: []].insert(entry.name) }
        }
    }

    /// On macOS, Foundation, AppKit and every framework with classes link libobjc, so a
    /// graph with Objective-C metadata always loads the runtime, even when none of its own
    /// images imports from it (pyobjc's `_machsignals`, `_inlines`). Stubs do the same:
    /// per architecture whose graphs have an image with Objective-C metadata (an
    /// `__objc_imageinfo`; a malformed one too, the launch reports it), every framework
    /// stub links the runtime's stub, and so does every stub exporting a class; the
    /// runtime's stub is added when no graph loads it. Not when the root holds a real
    /// libobjc: the launch then names it as another runtime.
    mutating func linkRuntime() throws(CommandFailure) {
        var objcArches = Set<String>()
        for graph in graphs {
            for case let .image(file) in graph.nodes {
                let hasMetadata: Bool
                do { hasMetadata = try ObjCSections(image: file.image) != nil } catch { hasMetadata = true }
                if hasMetadata { objcArches.insert(graph.arch) }
            }
        }
        let runtimePath = stubFiles.first { $0.value.installName == StubObjC.runtimeInstallName }?.key
            ?? root + StubObjC.runtimeInstallName
        var arches = Set<String>()
        for (key, exports) in stubExports where key.path != runtimePath {
            let isFramework = key.path.contains(".framework/")
            let exportsClass = exports.keys.contains { $0.hasPrefix(StubObjC.classPrefix) || $0.hasPrefix(StubObjC.metaclassPrefix) }
            guard (isFramework && objcArches.contains(key.arch)) || exportsClass else { continue }
            runtimeLinks.insert(key)
            arches.insert(key.arch)
        }
        guard !arches.isEmpty else { return }
        if stubFiles[runtimePath] == nil {
            guard try !files.isRealImage(runtimePath) else {
                runtimeLinks = []
                return
            }
            // libobjc.A.dylib's versions on macOS: current 228.0.0, compatibility 1.0.0.
            stubFiles[runtimePath] = StubFile(installName: StubObjC.runtimeInstallName, currentVersion: 228 << 16, compatibilityVersion: 1 << 16)
        }
        for arch in arches where stubExports[StubSliceKey(path: runtimePath, arch: arch)] == nil {
            stubExports[StubSliceKey(path: runtimePath, arch: arch)] = [:]
        }
    }

    func plan() -> StubRootPlan {
        func slices(_ exports: [String: [String: Bool]], path: String? = nil) -> [StubSlice] {
            exports.keys.sorted().map { arch in
                StubSlice(arch: arch, exports: (exports[arch] ?? [:]).map { StubExport(name: $0.key, isWeakDefinition: $0.value) }.sorted(),
                          linksRuntime: path.map { runtimeLinks.contains(StubSliceKey(path: $0, arch: arch)) } ?? false)
            }
        }
        var byPath: [String: [String: [String: Bool]]] = [:]
        for (key, exports) in stubExports { byPath[key.path, default: [:]][key.arch] = exports }
        let stubs = stubFiles.map { path, file in
            StubDylib(
                installName: file.installName, path: path,
                currentVersion: max(file.currentVersion, file.compatibilityVersion),
                compatibilityVersion: file.compatibilityVersion,
                slices: slices(byPath[path] ?? [:], path: path))
        }.sorted { ($0.installName, $0.path) < ($1.installName, $1.path) }
        let host = StubHost(
            path: app?.hostPath ?? StubRootPlan.hostPath(root: root),
            rpaths: app.map { [$0.hostRPath] } ?? [],
            slices: slices(hostExports.mapValues { Dictionary(uniqueKeysWithValues: $0.map { ($0, false) }) }))
        return StubRootPlan(
            root: root, platform: platform ?? .macOS, stubs: stubs, host: host, unresolved: unresolved, missingDylibs: missingDylibs)
    }

    // MARK: Lookup

    /// Binds `name` to node `target` of graph `g`: found there (or in what it re-exports)
    /// in a real image or in a stub already exporting it, else exported by the first stub
    /// it would be looked up in. False when neither.
    private mutating func bind(_ name: String, in target: Int, graph g: Int, weakDefinition: Bool) throws(CommandFailure) -> Bool {
        var found = try locate(name, in: target, graph: g)
        if found == nil { found = try locate(name, in: target, graph: g, claimingStubs: true) }
        guard let found else { return false }
        if case let .stub(_, path) = graphs[g].nodes[found.node] {
            let key = StubSliceKey(path: path, arch: graphs[g].arch)
            stubExports[key, default: [:]][found.name] = (stubExports[key]?[found.name] ?? false) || weakDefinition
        }
        return true
    }

    /// Where `name`, looked up in node `index` the two-level way, is defined: the node's
    /// export trie, re-exports followed (renamed ones under their new name), then the
    /// dylibs it re-exports whole. A stub counts when it already exports the name or,
    /// with `claimingStubs`, always.
    private mutating func locate(_ name: String, in index: Int, graph g: Int, claimingStubs: Bool = false) throws(CommandFailure) -> Found? {
        var visited = Set<Int>()
        return try locate(name, in: index, graph: g, claimingStubs: claimingStubs, visited: &visited)
    }

    private mutating func locate(
        _ name: String, in index: Int, graph g: Int, claimingStubs: Bool, visited: inout Set<Int>
    ) throws(CommandFailure) -> Found? {
        guard visited.insert(index).inserted else { return nil }
        let graph = graphs[g]
        switch graph.nodes[index] {
        case let .stub(_, path):
            let exported = stubExports[StubSliceKey(path: path, arch: graph.arch)]?[name] != nil
            return exported || claimingStubs ? (node: index, name: name) : nil
        case let .image(file):
            if let trie = try exportTrie(of: file, arch: graph.arch), let symbol = try lookup(name, in: trie, of: file) {
                guard case let .reexport(ordinal, importedName) = symbol.definition else { return (node: index, name: name) }
                guard let target = graph.target(of: ordinal, in: index) else { return nil }
                return try locate(
                    importedName.isEmpty ? name : importedName, in: target, graph: g, claimingStubs: claimingStubs, visited: &visited)
            }
            for edge in graph.edges[index] where edge.dependency.kind == .reexport {
                guard let target = edge.target else { continue }
                if let found = try locate(name, in: target, graph: g, claimingStubs: claimingStubs, visited: &visited) { return found }
            }
            return nil
        }
    }

    private func lookup(_ name: String, in trie: ExportTrie, of file: ImageFile) throws(CommandFailure) -> ExportedSymbol? {
        do { return try trie.lookup(name) } catch { throw .load(.malformed(error.inFile(file.path))) }
    }

    private mutating func exportTrie(of file: ImageFile, arch: String) throws(CommandFailure) -> ExportTrie? {
        try Self.memo(&tries, arch + ":" + file.path, file) { (image) throws(MachOError) in try image.exportTrie() }
    }

    private mutating func imports(of file: ImageFile, arch: String) throws(CommandFailure) -> [SymbolImport] {
        try Self.memo(&importsByImage, arch + ":" + file.path, file) { (image) throws(MachOError) in try image.symbolImports() }
    }

    /// `cache[key]`, else what `read` makes of the file's image (kept there); a malformed image fails the plan.
    private static func memo<T>(_ cache: inout [String: T], _ key: String, _ file: ImageFile,
                                _ read: (MachOImage) throws(MachOError) -> T) throws(CommandFailure) -> T {
        if let known = cache[key] { return known }
        do {
            let value = try read(file.image)
            cache[key] = value
            return value
        } catch {
            throw .load(.malformed(error.inFile(file.path)))
        }
    }

    private mutating func note(_ entry: SymbolImport, of path: String, arch: String, expectedIn: String) {
        let missing = UnresolvedImport(symbol: entry.name, importedBy: path, arch: arch, expectedIn: expectedIn)
        if seenUnresolved.insert(missing).inserted { unresolved.append(missing) }
    }
}
