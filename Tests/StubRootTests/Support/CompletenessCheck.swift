import LoaderCore
import MachOReader
import Testing

/// Checks a written stub root on its own terms, without the plan: loads a binary's graph
/// with `LoaderCore.DependencyGraph` under the root (the stub host first, found as a
/// launch finds it, unless the binary is an executable) and binds every import of every image against the export
/// tries of the files on disk:
///
/// - ordinal 1...N: the dylib the ordinal names, re-exports followed;
/// - 0: the image itself; -1: the main executable (the first node);
/// - -2: any image of the graph, the host included;
/// - -3: the same, or nothing (weak coalescing keeps the image's own definition).
struct CompletenessCheck {
    /// One import that binds nowhere.
    struct Unresolved: Equatable, CustomStringConvertible {
        let symbol: String
        let importedBy: String
        let libraryOrdinal: Int
        var description: String { "\(symbol) (ordinal \(libraryOrdinal)) imported by \(importedBy)" }
    }

    let graph: DependencyGraph
    private(set) var checkedImports = 0
    private(set) var unresolved: [Unresolved] = []
    /// The paths of the images whose imports were checked.
    private(set) var checkedImages: [String] = []
    private let tries: [ExportTrie?]

    init(binary: String, arch: String, root: String) throws {
        let fileType = try ImageFile.load(path: binary, arch: arch).image.header.fileType
        let roots = try LaunchRoots.roots(for: binary, fileType: fileType, root: root, host: nil)
        #expect(fileType == .execute || roots.count == 2, "\(binary): the root has no host")
        graph = try DependencyGraph(roots: roots, arch: arch, root: root)
        tries = try graph.nodes.map { try $0.image.exportTrie() }
        for index in graph.nodes.indices {
            try check(index)
        }
    }

    private mutating func check(_ index: Int) throws {
        let image = graph.nodes[index].image
        var imports: [(name: String, ordinal: Int)] = []
        if let chained = try image.parseChainedFixups() {
            imports += chained.imports.map { ($0.name, $0.libraryOrdinal) }
        }
        for stream in BindStreamKind.allCases {
            imports += try image.bindFixups(stream).filter { !$0.isStrongDefinition }.map { ($0.symbolName, $0.libraryOrdinal) }
        }
        checkedImages.append(graph.nodes[index].path)
        for (name, ordinal) in imports {
            checkedImports += 1
            let bound: Bool
            switch ordinal {
            case 1...:
                guard let target = graph.target(of: ordinal, in: index) else {
                    bound = false
                    break
                }
                bound = try defines(name, target)
            case 0: bound = try defines(name, index)
            case -1: bound = try defines(name, 0)
            case -2: bound = try graph.nodes.indices.contains { try defines(name, $0) }
            default: bound = true  // -3: found in some image or left to the image's own definition
            }
            if !bound { unresolved.append(Unresolved(symbol: name, importedBy: graph.nodes[index].path, libraryOrdinal: ordinal)) }
        }
    }

    /// Whether node `index` exports `name`, itself or through what it re-exports.
    private func defines(_ name: String, _ index: Int, depth: Int = 0) throws -> Bool {
        guard depth < graph.nodes.count else { return false }
        if let symbol = try tries[index]?.lookup(name) {
            guard case let .reexport(ordinal, importedName) = symbol.definition else { return true }
            guard let target = graph.target(of: ordinal, in: index) else { return false }
            return try defines(importedName.isEmpty ? name : importedName, target, depth: depth + 1)
        }
        for edge in graph.nodes[index].dependencies where edge.kind == .reexport {
            if let target = edge.target, try defines(name, target, depth: depth + 1) { return true }
        }
        return false
    }
}
