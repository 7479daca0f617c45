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
        var text = TextBuffer()
        defer { text.flush(to: &out) }
        text.write("\nExports trie:\n")
        guard let trie = try image.exportTrie(dyldInfoFirst: true) else { return }
        let base = image.preferredLoadAddress
        try trie.forEachSymbol { symbol throws(MachOError) in
            try writeLine(symbol, base: base, image: image, trie: trie, to: &text)
            text.flushIfFull(to: &out)
        }
    }

    private static func writeLine(
        _ symbol: ExportedSymbol, base: UInt64, image: MachOImage, trie: ExportTrie, to text: inout TextBuffer
    ) throws(MachOError) {
        if symbol.isReexport {
            text.write("[re-export] ")
        } else {
            text.write("0x")
            text.hex(base &+ (symbol.imageOffset ?? 0), width: 8)
            text.write("  ")
        }
        text.write(symbol.name)
        var noted = false
        func note(_ note: String) {
            text.write(noted ? ", " : " [")
            text.write(note)
            noted = true
        }
        if symbol.isWeakDefinition { note("weak_def") }
        if symbol.kind == .threadLocal { note("per-thread") }
        if symbol.kind == .absolute { note("absolute") }
        if case let .stubAndResolver(_, resolverOffset) = symbol.definition {
            note("resolver=0x")
            text.hex(resolverOffset, width: 8)
        }
        if noted { text.write("]") }
        if case let .reexport(ordinal, importedName) = symbol.definition {
            guard ordinal <= image.dependencies.count else {
                throw MachOError.malformed(
                    "re-export \(symbol.name) names library ordinal \(ordinal) but the image has \(image.dependencies.count) libraries",
                    at: trie.view.absolute(symbol.nodeOffset))
            }
            let library = ordinal == 0 ? "unknown" : LibraryShortName.of(image.dependencies[ordinal - 1].installName)
            text.write(importedName.isEmpty ? " (from " : " (\(importedName) from ")
            text.write(library)
            text.write(")")
        }
        text.write(ascii: UInt8(ascii: "\n"))
    }
}
