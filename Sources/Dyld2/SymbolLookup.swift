import LoaderCore
import MachOReader
import LaunchPlan

/// dyld2's symbol lookup, by name, in the export tries of one launch's images: two-level
/// (by library ordinal, following re-exports), flat (every image in load order) and
/// weak-definition coalescing. Tries are parsed once per launch.
///
/// Names are the importing image's bytes, compared with the tries' edge labels in place.
/// Like dyld2 (`ImageLoaderMachOCompressed::resolve`'s `LastLookup`), the last resolution
/// is remembered: bind opcodes for one symbol come in runs. A lookup allocates nothing once
/// the reused buffers have grown.
struct SymbolLookup {
    let graph: DependencyGraph
    private var tries: [ExportTrie?]
    /// Per image, the node each library ordinal names (-1 for a missing weak-linked dylib):
    /// ordinal N of image i is `ordinalTargets[ordinalStart[i] + N - 1]`.
    private let ordinalStart: [Int]
    private let ordinalTargets: [Int]
    /// Per image, the nodes of the dylibs it re-exports, in load-command order:
    /// `reexportTargets[reexportStart[i]..<reexportStart[i + 1]]`.
    private let reexportStart: [Int]
    private let reexportTargets: [Int]
    /// The images that carry `MH_WEAK_DEFINES`, in load order.
    private let weakDefinitionImages: [Int]
    /// Weak coalescing's answer per name, each name searched once per launch (dyld2's
    /// `weakBind` also settles each name once, for every image that binds it).
    private var coalesced = WeakWinners()
    /// The last resolution: (image, ordinal, name) and its result; image -1 before the
    /// first. Fields, not an optional structure, so that checking it copies nothing.
    private var lastImage = -1
    private var lastOrdinal = 0
    private var lastName: ByteView
    private var lastResult: BindTarget?
    private var trieScratch = ExportTrie.LookupPath()
    /// The re-export search's explicit stack and visited marks (an image is visited in the
    /// current search when its mark equals `generation`), kept across lookups.
    private var searchStack: [ReexportSearch] = []
    private var visitedGeneration: [UInt32]
    private var generation: UInt32 = 0
    /// Lookups by name in a trie performed, for `--stats`.
    private(set) var lookups = 0

    init(graph: DependencyGraph) throws(LoadError) {
        self.graph = graph
        var tries: [ExportTrie?] = []
        var ordinalStart: [Int] = [], ordinalTargets: [Int] = []
        var reexportStart: [Int] = [], reexportTargets: [Int] = []
        var weakDefinitionImages: [Int] = []
        for (index, node) in graph.nodes.enumerated() {
            tries.append(try LoadError.reading(node.path) { () throws(MachOError) in try node.image.exportTrie() })
            ordinalStart.append(ordinalTargets.count)
            reexportStart.append(reexportTargets.count)
            for edge in node.dependencies {
                ordinalTargets.append(edge.target ?? -1)
                if edge.kind == .reexport, let target = edge.target { reexportTargets.append(target) }
            }
            if node.hasWeakDefs { weakDefinitionImages.append(index) }
        }
        ordinalStart.append(ordinalTargets.count)
        reexportStart.append(reexportTargets.count)
        self.tries = tries
        self.ordinalStart = ordinalStart
        self.ordinalTargets = ordinalTargets
        self.reexportStart = reexportStart
        self.reexportTargets = reexportTargets
        self.weakDefinitionImages = weakDefinitionImages
        visitedGeneration = Array(repeating: 0, count: graph.nodes.count)
        lastName = graph.nodes.first?.image.view ?? ByteView([])
    }

    /// The node library `ordinal` (1-based) of image `index` names, nil for a missing weak-linked
    /// dylib or an ordinal the image lacks. Inlined: a call would copy the whole lookup state.
    @inline(__always)
    private func target(of ordinal: Int, in index: Int) -> Int? {
        let slot = ordinalStart[index] + ordinal - 1
        guard ordinal >= 1, slot < ordinalStart[index + 1] else { return nil }
        let target = ordinalTargets[slot]
        return target >= 0 ? target : nil
    }

    /// The definition `name` resolves to in image `index` or, failing that, in the dylibs it
    /// re-exports (depth first, in load-command order, each image once): dyld's
    /// `findExportedSymbol`. An explicit stack: a re-export chain of any depth costs no stack.
    mutating func find(_ name: ByteView, in index: Int) throws(LoadError) -> BindTarget? {
        // The common case, a definition in the image's own trie, needs no search state.
        let own = try exported(name, by: index)
        if let own, let target = Self.target(own, in: index) { return target }
        if own == nil, reexportStart[index] == reexportStart[index + 1] { return nil }

        generation &+= 1
        if generation == 0 {  // wrapped: forget every stamp
            visitedGeneration = Array(repeating: 0, count: visitedGeneration.count)
            generation = 1
        }
        searchStack.removeAll(keepingCapacity: true)
        visitedGeneration[index] = generation
        searchStack.append(ReexportSearch(name: name, image: index, nextEdge: reexportStart[index]))
        if let own, try !follow(own, of: name, depth: 0) { return nil }
        while let frame = searchStack.last {
            let depth = searchStack.count - 1
            if frame.nextEdge == -1 {
                // First visit of this image: its own trie, then (below) its re-exported dylibs.
                guard visitedGeneration[frame.image] != generation else {
                    searchStack.removeLast()
                    continue
                }
                visitedGeneration[frame.image] = generation
                if let terminal = try exported(frame.name, by: frame.image) {
                    if let target = Self.target(terminal, in: frame.image) { return target }
                    if try !follow(terminal, of: frame.name, depth: depth) { searchStack.removeLast() }
                    continue
                }
                searchStack[depth].nextEdge = reexportStart[frame.image]
                continue
            }
            // Next re-exported dylib of this image, if any.
            guard frame.nextEdge < reexportStart[frame.image + 1] else {
                searchStack.removeLast()
                continue
            }
            searchStack[depth].nextEdge = frame.nextEdge + 1
            searchStack.append(ReexportSearch(name: frame.name, image: reexportTargets[frame.nextEdge], nextEdge: -1))
        }
        return nil
    }

    /// A re-export found for `name` by frame `depth`'s image: the frame becomes the search for
    /// the re-exported symbol. False when the ordinal names a missing dylib.
    private mutating func follow(_ reexport: ExportTerminal, of name: ByteView, depth: Int) throws(LoadError) -> Bool {
        let image = searchStack[depth].image
        guard case let .reexport(ordinal, importedName) = reexport.definition,
              let target = target(of: ordinal, in: image) else { return false }
        var wanted = name
        if !importedName.isEmpty, let trie = tries[image] {
            wanted = try LoadError.reading(graph.nodes[image].path) { () throws(MachOError) in
                try reexport.importedName(importedName, in: trie.view)
            }
        }
        searchStack[depth] = ReexportSearch(name: wanted, image: target, nextEdge: -1)
        return true
    }

    /// What a terminal that is not a re-export binds to (nil for a re-export).
    private static func target(_ terminal: ExportTerminal, in image: Int) -> BindTarget? {
        switch terminal.definition {
        case let .image(offset):
            return terminal.kind == .absolute ? .absolute(offset) : .image(image, offset: offset)
        case let .stubAndResolver(stubOffset, _):
            return .image(image, offset: stubOffset)
        case let .functionVariant(defaultOffset, _):
            return .image(image, offset: defaultOffset)
        case .reexport:
            return nil
        }
    }

    /// One image being searched for `name`: -1 before its own trie was looked at, then the
    /// index in `reexportTargets` of the next re-exported dylib to try.
    private struct ReexportSearch {
        var name: ByteView
        var image: Int
        var nextEdge: Int
    }

    /// `name` in image `index`'s own export trie (one lookup by name).
    private mutating func exported(_ name: ByteView, by index: Int) throws(LoadError) -> ExportTerminal? {
        lookups += 1
        do {
            return try tries[index]?.lookup(name, path: &trieScratch)
        } catch {
            throw .malformed(error.inFile(graph.nodes[index].path))
        }
    }

    /// A flat-namespace lookup: the first image in load order that exports `name`.
    mutating func findFlat(_ name: ByteView) throws(LoadError) -> BindTarget? {
        for index in graph.nodes.indices {
            if let found = try find(name, in: index) { return found }
        }
        return nil
    }

    /// Weak-definition coalescing, over the images that carry `MH_WEAK_DEFINES` only (however
    /// early another loads): the first non-weak definition of `name` in load order, else the
    /// first weak one, each image's own trie only (no re-exports). Every weak bind of `name`
    /// goes to the winner. dyld4:
    /// `Loader::resolveSymbol` (`BIND_SPECIAL_DYLIB_WEAK_LOOKUP`, `if (ldr->hasWeakDefs)`);
    /// dyld-852: `MachOAnalyzerSet::mas_fromImageWeakDefLookup`, `ImageLoader::weakBind`.
    mutating func findCoalesced(_ name: ByteView) throws(LoadError) -> BindTarget? {
        let (known, hash) = coalesced.find(name)
        if let known { return coalesced.winner(known) }
        var firstWeak: BindTarget?
        var winner: BindTarget?
        for index in weakDefinitionImages {
            guard let terminal = try exported(name, by: index), let offset = terminal.imageOffset else { continue }
            let target: BindTarget = terminal.kind == .absolute ? .absolute(offset) : .image(index, offset: offset)
            if !terminal.isWeakDefinition { winner = target; break }
            if firstWeak == nil { firstWeak = target }
        }
        let result = winner ?? firstWeak
        coalesced.record(result, for: name, hash: hash)
        return result
    }

    /// Resolves an import of image `index` by library ordinal (special ordinals included); nil
    /// when the symbol is nowhere.
    mutating func resolve(_ name: ByteView, ordinal: Int, from index: Int) throws(LoadError) -> BindTarget? {
        if lastImage == index, lastOrdinal == ordinal, lastName.sameBytes(as: name) { return lastResult }
        let result: BindTarget?
        switch ordinal {
        case BindFixup.ordinalSelf: result = try find(name, in: index)
        case BindFixup.ordinalMainExecutable: result = try find(name, in: 0)
        case BindFixup.ordinalFlatLookup: result = try findFlat(name)
        case BindFixup.ordinalWeakLookup: result = try findCoalesced(name)
        default:
            guard ordinal >= 1, ordinal <= ordinalStart[index + 1] - ordinalStart[index] else {
                throw .malformed(MachOError.malformed(
                    "bind of \(name.string) uses library ordinal \(ordinal) but the image has \(graph.nodes[index].dependencies.count) dependencies",
                    at: graph.nodes[index].image.view.base).inFile(graph.nodes[index].path))
            }
            guard let target = target(of: ordinal, in: index) else { result = nil; break }
            result = try find(name, in: target)
        }
        (lastImage, lastOrdinal, lastName, lastResult) = (index, ordinal, name, result)
        return result
    }

    /// Whether library `ordinal` of image `index` names a weak-linked dylib that is missing.
    @inline(__always)
    func namesMissingDylib(ordinal: Int, from index: Int) -> Bool {
        ordinal >= 1 && ordinal <= ordinalStart[index + 1] - ordinalStart[index] && target(of: ordinal, in: index) == nil
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
