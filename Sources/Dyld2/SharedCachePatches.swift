import LaunchPlan
import LoaderCore
import MachOReader
import SharedCache

/// The words of the shared cache's images a dyld2 launch patches, as dyld2 walks the cache's
/// patch table for a weak definition it coalesces elsewhere than the cache's build did.
///
/// The cache coalesced each weak definition among its own images when it was built (the
/// first of its image table, which is its build's load order, that defines it, a non-weak
/// definition first); this launch coalesces it among the images it loads, the app's first.
/// Where the two differ, every use the cache's patch table lists for its winner
/// (``DyldCachePatchTable``) in a cached image this launch loaded is rebound to the
/// launch's, with the use's addend. The cache's winner is found from the table, as dyld
/// matches a patchable export by its name: the export listed under the name (a name listed
/// more than once is looked up in the cache's tries), so only the names with uses are
/// coalesced again.
enum SharedCachePatches {
    /// Per node of `graph`, the patches of a node taken from the cache (empty for the others):
    /// each a bind to the launch's definition at a word that holds the cache's.
    static func compute(graph: DependencyGraph, plans: [ImagePlan], resolver: inout FixupResolver,
                        cache: SharedCacheDylibs) throws(LoadError) -> [[ResolvedFixup]] {
        let none = [[ResolvedFixup]](repeating: [], count: graph.nodes.count)
        // The names some image of the launch defines weakly, each once: the only ones coalescing
        // can move (their bytes, hashed in place, no string made while the table is read).
        var names = WeakWinners()
        for node in graph.nodes where node.hasWeakDefs {
            try LoadError.reading(node.path) { () throws(MachOError) in
                try node.image.exportTrie()?.forEachName(flagged: ExportedSymbol.weakDefinitionFlag, excluding: ExportedSymbol.reexportFlag) { bytes in
                    let name = ByteView(Array(bytes))
                    names.insert(name)
                }
            }
        }
        guard names.count > 0 else { return none }
        let table = cache.patchTable
        // Per name, the exports the patch table lists under it: only they have uses to patch.
        var listed = [[UInt64]](repeating: [], count: names.count)
        do throws(MachOError) {
            for image in 0..<table.imageCount {
                for index in try table.exportRange(ofImage: image) {
                    let export = try table.export(index)
                    if let entry = names.entry(of: try table.nameBytes(export)) { listed[entry].append(UInt64(export.cacheOffsetOfImpl)) }
                }
            }
        } catch {
            throw .failed(path: cache.cache.path, cause: .corrupt(path: cache.cache.path, offset: error.offset, what: error.description))
        }
        var tries: [(offset: UInt64, trie: ExportTrie)]?
        var moved: [UInt64: BindTarget] = [:]
        let order = listed.indices.filter { !listed[$0].isEmpty }.map { (entry: $0, name: names.name($0).string) }.sorted { $0.name < $1.name }
        for (entry, name) in order {
            let exports = listed[entry]
            var cached = exports.count == 1 ? exports.first : nil
            if cached == nil {
                if tries == nil {
                    tries = []
                    for (offset, image) in try failed(cache.cache.path, { () throws(ClosureError) in try cache.weakDefiningImages() }) {
                        if let trie = try LoadError.reading(cache.cache.path, { () throws(MachOError) in try image.exportTrie() }) { tries?.append((offset, trie)) }
                    }
                }
                var firstWeak: UInt64?
                for (imageOffset, trie) in tries ?? [] {
                    let found = try LoadError.reading(cache.cache.path) { () throws(MachOError) in try trie.lookup(name) }
                    guard let symbol = found, symbol.kind != .absolute, let symbolOffset = symbol.imageOffset else { continue }
                    if !symbol.isWeakDefinition { cached = imageOffset &+ symbolOffset; break }
                    if firstWeak == nil { firstWeak = imageOffset &+ symbolOffset }
                }
                cached = cached ?? firstWeak
            }
            guard let cached, case let .image(node, offset)? = try resolver.lookup.findCoalesced(names.name(entry)),
                  graph.nodes[node].cacheOffset.map({ $0 &+ offset }) != cached else { continue }
            moved[cached] = .image(node, offset: offset)
        }
        guard !moved.isEmpty else { return none }
        // The cached images this launch loaded, by region offset: the ones whose uses it patches.
        let loaded = graph.nodes.indices.compactMap { index in graph.nodes[index].cacheOffset.map { (node: index, offset: $0, size: plans[index].vmSize) } }
            .sorted { $0.offset < $1.offset }
        var patches = none
        do throws(MachOError) {
            for image in 0..<table.imageCount {
                for index in try table.exportRange(ofImage: image) {
                    let export = try table.export(index)
                    guard let target = moved[UInt64(export.cacheOffsetOfImpl)] else { continue }
                    for use in export.locations {
                        let location = try table.location(use)
                        let offset = UInt64(location.cacheOffset)
                        let after = loaded.partitionPoint { $0.offset <= offset }
                        guard after > 0, offset - loaded[after - 1].offset < loaded[after - 1].size else { continue }
                        let holder = loaded[after - 1], vmOffset = offset - holder.offset
                        // A use is a pointer the cache's fixups wrote: in a writable or `__DATA_CONST` segment.
                        guard plans[holder.node].segments.contains(where: { segment in
                            (segment.protection.contains(.write) || segment.readOnlyAfterFixups || segment.name == "__DATA_CONST")
                                && vmOffset >= segment.vmOffset && vmOffset + 8 <= segment.vmOffset + segment.vmSize
                        }) else {
                            throw MachOError.inCache("dyld_cache_patchable_location_v1", at: Int(location.cacheOffset), what:
                                "location \(use) is not in a writable or __DATA_CONST segment of \(graph.nodes[holder.node].installName ?? graph.nodes[holder.node].path)")
                        }
                        patches[holder.node].append(ResolvedFixup(vmOffset: vmOffset, kind: .bind(target, addend: location.addend)))
                    }
                }
            }
        } catch {
            throw .failed(path: cache.cache.path, cause: .corrupt(path: cache.cache.path, offset: error.offset, what: error.description))
        }
        return patches.map { $0.sorted { $0.vmOffset < $1.vmOffset } }
    }

    /// What `body` returns; a refusal of the cache at `path`, as the launch's error naming it.
    static func failed<T>(_ path: String, _ body: () throws(ClosureError) -> T) throws(LoadError) -> T {
        do {
            return try body()
        } catch {
            throw .failed(path: path, cause: error)
        }
    }
}
