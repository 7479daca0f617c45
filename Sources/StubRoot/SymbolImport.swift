import MachOReader

/// One symbol an image binds to: a name looked up the way its library ordinal says
/// (1...N a dependency, 0 this image, -1 the main executable, -2 flat lookup, -3 weak
/// lookup). An image has one per distinct (ordinal, name), however many fixups use it.
package struct SymbolImport: Hashable, Comparable, Sendable {
    package let name: String
    package let libraryOrdinal: Int
    /// Every bind of the name allows it to be missing (`BIND_SYMBOL_FLAGS_WEAK_IMPORT`,
    /// chained `weak_import`).
    package let isWeakImport: Bool

    /// Ordered by ordinal, then name: the order the planner visits imports in.
    package static func < (a: SymbolImport, b: SymbolImport) -> Bool {
        (a.libraryOrdinal, a.name, a.isWeakImport ? 1 : 0) < (b.libraryOrdinal, b.name, b.isWeakImport ? 1 : 0)
    }
}

extension MachOImage {
    /// Every symbol the image imports, from its chained-fixups import table or its
    /// dyld-info bind, lazy-bind and weak-bind streams, sorted. A weak-bind stream's
    /// entries are weak lookups (ordinal -3); its notes of strong definitions in this
    /// image are not imports.
    package func symbolImports() throws(MachOError) -> [SymbolImport] {
        var weakByKey: [ImportKey: Bool] = [:]
        func add(_ name: String, _ ordinal: Int, weak: Bool) {
            let key = ImportKey(name: name, libraryOrdinal: ordinal)
            weakByKey[key] = (weakByKey[key] ?? true) && weak
        }
        for entry in try parseChainedFixups()?.imports ?? [] { add(entry.name, entry.libraryOrdinal, weak: entry.weakImport) }
        for stream in BindStreamKind.allCases {
            try forEachBindFixup(in: stream) { bind throws(MachOError) in
                if !bind.isStrongDefinition { add(bind.symbolName, bind.libraryOrdinal, weak: bind.flags.contains(.weakImport)) }
            }
        }
        return weakByKey.map { SymbolImport(name: $0.key.name, libraryOrdinal: $0.key.libraryOrdinal, isWeakImport: $0.value) }
            .sorted()
    }
}

private struct ImportKey: Hashable {
    let name: String
    let libraryOrdinal: Int
}
