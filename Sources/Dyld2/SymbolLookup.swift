import LoaderCore
import MachOReader

/// dyld2's symbol lookup, by name, in the export tries of the images of one launch:
/// two-level (by library ordinal, following re-exports), flat (every image in load
/// order) and weak-definition coalescing (over the images with `MH_WEAK_DEFINES`: the
/// first non-weak definition in load order, else the first weak one). Tries are parsed once per launch; nothing survives the launch.
struct SymbolLookup {
    let graph: DependencyGraph
    private var tries: [ExportTrie?]
    private var coalesced: [String: BindTarget?] = [:]
    /// The re-export search's explicit stack and visited marks (an image is visited in the
    /// current search when its mark equals `generation`), kept across lookups so a lookup
    /// allocates nothing once they have grown.
    private var searchStack: [ReexportSearch] = []
    private var visitedGeneration: [UInt32]
    private var generation: UInt32 = 0
    /// Lookups by name performed, for `--stats`.
    private(set) var lookups = 0

    init(graph: DependencyGraph) throws(LoadError) {
        self.graph = graph
        var tries: [ExportTrie?] = []
        for node in graph.nodes {
            do {
                tries.append(try node.image.exportTrie())
            } catch {
                throw .malformed(error.inFile(node.path))
            }
        }
        self.tries = tries
        visitedGeneration = Array(repeating: 0, count: graph.nodes.count)
    }

    /// The definition `name` resolves to in image `index` itself or, failing that, in the
    /// dylibs it re-exports (depth first, in load-command order, each image searched once):
    /// dyld's `findExportedSymbol` through re-exported dylibs. Walked with an explicit stack,
    /// so a re-export chain of any depth costs memory, never stack.
    mutating func find(_ name: String, in index: Int) throws(LoadError) -> BindTarget? {
        generation &+= 1
        if generation == 0 {  // wrapped: forget every stamp
            visitedGeneration = Array(repeating: 0, count: visitedGeneration.count)
            generation = 1
        }
        searchStack.removeAll(keepingCapacity: true)
        searchStack.append(ReexportSearch(name: name, image: index, nextEdge: -1))
        while let frame = searchStack.last {
            let depth = searchStack.count - 1
            if frame.nextEdge == -1 {
                // First visit of this image: its own trie, then (below) its re-exported dylibs.
                guard visitedGeneration[frame.image] != generation else {
                    searchStack.removeLast()
                    continue
                }
                visitedGeneration[frame.image] = generation
                if let symbol = try exported(frame.name, by: frame.image) {
                    switch symbol.definition {
                    case let .image(offset):
                        return symbol.kind == .absolute ? .absolute(offset) : .image(frame.image, offset: offset)
                    case let .stubAndResolver(stubOffset, _):
                        return .image(frame.image, offset: stubOffset)
                    case let .functionVariant(defaultOffset, _):
                        return .image(frame.image, offset: defaultOffset)
                    case let .reexport(ordinal, importedName):
                        // The answer is the re-exported symbol's, whatever it is: this frame
                        // becomes the search for it.
                        guard let target = graph.target(of: ordinal, in: frame.image) else {
                            searchStack.removeLast()
                            continue
                        }
                        searchStack[depth] = ReexportSearch(name: importedName.isEmpty ? frame.name : importedName, image: target, nextEdge: -1)
                        continue
                    }
                }
                searchStack[depth].nextEdge = 0
                continue
            }
            // Next re-exported dylib of this image, if any.
            let edges = graph.nodes[frame.image].dependencies
            var edge = frame.nextEdge
            while edge < edges.count, edges[edge].kind != .reexport || edges[edge].target == nil { edge += 1 }
            guard edge < edges.count, let target = edges[edge].target else {
                searchStack.removeLast()
                continue
            }
            searchStack[depth].nextEdge = edge + 1
            searchStack.append(ReexportSearch(name: frame.name, image: target, nextEdge: -1))
        }
        return nil
    }

    /// One image being searched for `name`: -1 before its own trie was looked at, then the
    /// index of the next dependency edge to try.
    private struct ReexportSearch {
        var name: String
        var image: Int
        var nextEdge: Int
    }

    /// `name` in image `index`'s own export trie (one lookup by name).
    private mutating func exported(_ name: String, by index: Int) throws(LoadError) -> ExportedSymbol? {
        lookups += 1
        do {
            return try tries[index]?.lookup(name)
        } catch {
            throw .malformed(error.inFile(graph.nodes[index].path))
        }
    }

    /// A flat-namespace lookup: the first image in load order that exports `name`.
    mutating func findFlat(_ name: String) throws(LoadError) -> BindTarget? {
        for index in graph.nodes.indices {
            if let found = try find(name, in: index) { return found }
        }
        return nil
    }

    /// Weak-definition coalescing, over the images that carry `MH_WEAK_DEFINES` only: the
    /// first non-weak definition of `name` among them in load order, else the first weak
    /// one. A definition in an image without the flag takes no part, however early it
    /// loads. Each image looks in its own export trie only (re-exports are not followed).
    /// Every weak bind of `name` in every image goes to the winner. dyld4:
    /// `Loader::resolveSymbol` (`BIND_SPECIAL_DYLIB_WEAK_LOOKUP`, `if (ldr->hasWeakDefs)`);
    /// dyld-852: `MachOAnalyzerSet::mas_fromImageWeakDefLookup`, `ImageLoader::weakBind`.
    mutating func findCoalesced(_ name: String) throws(LoadError) -> BindTarget? {
        if let known = coalesced[name] { return known }
        var firstWeak: BindTarget?
        var winner: BindTarget?
        for index in graph.nodes.indices where graph.nodes[index].hasWeakDefs {
            guard let symbol = try exported(name, by: index), let offset = symbol.imageOffset else { continue }
            let target: BindTarget = symbol.kind == .absolute ? .absolute(offset) : .image(index, offset: offset)
            if !symbol.isWeakDefinition { winner = target; break }
            if firstWeak == nil { firstWeak = target }
        }
        let result = winner ?? firstWeak
        coalesced[name] = result
        return result
    }

    /// Resolves an import of image `index` by library ordinal (special ordinals included).
    /// Returns nil when the symbol is nowhere to be found.
    mutating func resolve(_ name: String, ordinal: Int, from index: Int) throws(LoadError) -> BindTarget? {
        switch ordinal {
        case BindFixup.ordinalSelf: return try find(name, in: index)
        case BindFixup.ordinalMainExecutable: return try find(name, in: 0)
        case BindFixup.ordinalFlatLookup: return try findFlat(name)
        case BindFixup.ordinalWeakLookup: return try findCoalesced(name)
        default:
            guard ordinal >= 1, ordinal <= graph.nodes[index].dependencies.count else {
                throw .malformed(MachOError.malformed(
                    "bind of \(name) uses library ordinal \(ordinal) but the image has \(graph.nodes[index].dependencies.count) dependencies",
                    at: graph.nodes[index].image.view.base).inFile(graph.nodes[index].path))
            }
            guard let target = graph.target(of: ordinal, in: index) else { return nil }
            return try find(name, in: target)
        }
    }

    /// The name shown in errors for the library an ordinal names.
    func libraryName(ordinal: Int, from index: Int) -> String {
        switch ordinal {
        case BindFixup.ordinalSelf: return graph.nodes[index].path
        case BindFixup.ordinalMainExecutable: return "the main executable"
        case BindFixup.ordinalFlatLookup: return "any image (flat namespace)"
        case BindFixup.ordinalWeakLookup: return "any image (weak definition)"
        default:
            let edges = graph.nodes[index].dependencies
            return ordinal >= 1 && ordinal <= edges.count ? edges[ordinal - 1].installName : "library ordinal \(ordinal)"
        }
    }
}
