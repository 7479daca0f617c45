import MachOReader

/// `llvm-objdump --macho --exports-trie`: one line per exported symbol, in trie walk order.
///
/// Addresses are the symbol's offset plus the vmaddr of the segment mapped at file offset
/// 0, as `0x%08llX`; a re-export prints `[re-export]` instead and ends with the library it
/// comes from (`unknown` for ordinal 0); flags print as `[weak_def, per-thread, absolute,
/// resolver=0x...]`. Like llvm-objdump, the table reads LC_DYLD_INFO's export range when it
/// has bytes and LC_DYLD_EXPORTS_TRIE otherwise.
enum ExportsTrieTable {
    static func write<Output: TextOutputStream>(_ image: MachOImage, to out: inout Output) throws(MachOError) {
        out.write("\nExports trie:\n")
        var trie = try image.dyldInfoExportTrie()
        if trie == nil { trie = try image.exportTrie() }
        guard let trie else { return }
        let base = image.preferredLoadAddress
        try trie.forEachSymbol { symbol throws(MachOError) in
            out.write(try line(symbol, base: base, image: image, trie: trie))
        }
    }

    private static func line(_ symbol: ExportedSymbol, base: UInt64, image: MachOImage, trie: ExportTrie) throws(MachOError) -> String {
        var text = symbol.isReexport ? "[re-export] " : "0x\(hex08(base &+ (symbol.imageOffset ?? 0)))  "
        text += symbol.name
        var notes: [String] = []
        if symbol.isWeakDefinition { notes.append("weak_def") }
        if symbol.kind == .threadLocal { notes.append("per-thread") }
        if symbol.kind == .absolute { notes.append("absolute") }
        if case let .stubAndResolver(_, resolverOffset) = symbol.definition {
            notes.append("resolver=0x\(hex08(resolverOffset))")
        }
        if !notes.isEmpty { text += " [" + notes.joined(separator: ", ") + "]" }
        if case let .reexport(ordinal, importedName) = symbol.definition {
            guard ordinal <= image.dependencies.count else {
                throw MachOError.malformed(
                    "re-export \(symbol.name) names library ordinal \(ordinal) but the image has \(image.dependencies.count) libraries",
                    at: trie.view.absolute(symbol.nodeOffset))
            }
            let library = ordinal == 0 ? "unknown" : LibraryShortName.of(image.dependencies[ordinal - 1].installName)
            text += importedName.isEmpty ? " (from \(library))" : " (\(importedName) from \(library))"
        }
        return text + "\n"
    }

    /// `%08llX`: upper-case hex, at least eight digits.
    private static func hex08(_ value: UInt64) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 8 - digits.count)) + digits
    }
}
