import TestSupport
import Foundation
import MachOInspect
import MachOReader
import Testing

/// Export tries: `--exports-trie` against llvm-objdump-19 on every corpus file and reader
/// fixture (and on fixtures whose trie is replaced by a hand-built one holding re-exports
/// and resolvers, which no linker here can emit), lookups against the full walk, and the
/// decoder's failure modes on hand-built bytes.
@Suite(.bounded) struct ExportTrieTests {
    // MARK: - Against the oracle

    /// Compares `--exports-trie` on every slice of `files`; returns the number of comparisons.
    static func compareWithObjdump(_ files: [String]) async throws -> Int {
        var comparisons = 0
        for path in files {
            for arch in try Corpus.architectures(path) {
                let difference = try await inspectDifference(path: path, table: .exportsTrie, arch: arch)
                #expect(difference == nil, "\(difference ?? "")")
                comparisons += 1
            }
        }
        return comparisons
    }

    static func readerFixtureFiles() throws -> [String] {
        guard FileManager.default.fileExists(atPath: Paths.readerFixtures.path) else {
            throw Oracle.Failure(description: "\(Paths.readerFixtures.path) is missing: run tools/build-reader-fixtures (make test does)")
        }
        return try Corpus.machOFiles(under: Paths.readerFixtures)
    }

    @Test func corpusMatchesObjdump() async throws {
        let comparisons = try await Self.compareWithObjdump(try Corpus.machOFiles())
        print("exports trie: \(comparisons) comparisons with llvm-objdump over the corpus")
        #expect(comparisons > 0)
    }

    @Test func readerFixturesMatchObjdump() async throws {
        let comparisons = try await Self.compareWithObjdump(try Self.readerFixtureFiles())
        print("exports trie: \(comparisons) comparisons with llvm-objdump over the reader fixtures")
        #expect(comparisons > 0)
    }

    /// Re-exports (with and without an imported name, from ordinal 0), stubs with
    /// resolvers and every flag combination, spliced into a fixture's trie range (the
    /// dyld-info range of an opcodes build, LC_DYLD_EXPORTS_TRIE of a chained one).
    @Test(arguments: ["x86_64-opcodes/libbase.dylib", "arm64-chained/libbase.dylib"])
    func handBuiltTrieInAFixtureMatchesObjdump(fixture: String) async throws {
        _ = try Self.readerFixtureFiles()
        var bytes = try Corpus.bytes(Paths.readerFixtures.appendingPathComponent(fixture).path)
        let image = try MachOImage(parsing: bytes)
        let range: (offset: Int, size: Int)
        if let data = image.exportsTrie, data.dataSize > 0 {
            range = (Int(data.dataOffset), Int(data.dataSize))
        } else {
            let info = try #require(image.dyldInfo)
            range = (Int(info.export.dataOffset), Int(info.export.dataSize))
        }
        let trie = TrieNode(children: [
            ("_re", TrieNode(children: [
                ("export_plain", TrieNode(terminal: reexportInfo(flags: 0x08, ordinal: 1, importedName: ""))),
                ("export_renamed", TrieNode(terminal: reexportInfo(flags: 0x08, ordinal: 1, importedName: "_system_exit"))),
                ("export_weak", TrieNode(terminal: reexportInfo(flags: 0x0C, ordinal: 1, importedName: "_other"))),
                ("export_unknown", TrieNode(terminal: reexportInfo(flags: 0x08, ordinal: 0, importedName: ""))),
            ])),
            ("_resolved", TrieNode(terminal: stubAndResolverInfo(flags: 0x10, stub: 0x540, resolver: 0x580), children: [
                ("_weak", TrieNode(terminal: stubAndResolverInfo(flags: 0x14, stub: 0x550, resolver: 0x1_0000_0000))),
            ])),
            ("_tlv_weak", TrieNode(terminal: regularInfo(flags: 0x05, offset: 0x2118))),
            ("_abs_weak", TrieNode(terminal: regularInfo(flags: 0x06, offset: 0x1234_5678_9A))),
            ("_plain", TrieNode(terminal: regularInfo(flags: 0x00, offset: 0x530))),
        ]).encoded()
        try #require(trie.count <= range.size, "hand-built trie (\(trie.count) bytes) does not fit \(fixture)'s \(range.size)")
        bytes.replaceSubrange(range.offset..<(range.offset + range.size), with: trie + Array(repeating: 0, count: range.size - trie.count))

        let directory = URL(fileURLWithPath: try Scratch.directory("ExportTrieTests"))
        defer { Scratch.remove(directory.path) }
        let path = directory.appendingPathComponent("libbase.dylib").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))

        let objdump = try await Oracle.objdump(["--exports-trie", path])
        #expect(objdump.contains("[re-export] _reexport_renamed (_system_exit from libSystem)"))
        #expect(objdump.contains("resolver=0x100000000"))
        let difference = try await inspectDifference(path: path, table: .exportsTrie, arch: nil)
        #expect(difference == nil, "\(difference ?? "")")
    }

    // MARK: - Lookups against the walk

    /// Every symbol the walk finds, looked up by name, is the same symbol; names next to
    /// real ones (a prefix, one more character) are absent.
    static func checkLookups(_ files: [String]) throws -> (found: Int, absent: Int) {
        var found = 0, absent = 0
        try forEachTrie(files) { path, slice, trie, symbols, names throws in
            #expect(names.count == symbols.count, "\(path): a name is exported twice")
            for symbol in symbols {
                #expect(try trie.lookup(symbol.name) == symbol, "\(path) \(slice.cpu.name): \(symbol.name)")
                found += 1
                let utf8 = Array(symbol.name.utf8)
                var neighbours = [symbol.name + "_", symbol.name + "\u{7f}"]
                if !utf8.isEmpty, let prefix = String(validating: utf8.dropLast(), as: UTF8.self) { neighbours.append(prefix) }
                for name in neighbours where !names.contains(name) {
                    #expect(try trie.lookup(name) == nil, "\(path) \(slice.cpu.name): \(name) should be absent")
                    absent += 1
                }
            }
        }
        return (found, absent)
    }

    /// Calls `body` with each slice of `files` that has an exports trie: the trie, its
    /// symbols as the walk finds them, and their names.
    static func forEachTrie(
        _ files: [String], _ body: (String, UniversalFile.Slice, ExportTrie, [ExportedSymbol], Set<String>) throws -> Void
    ) throws {
        for path in files {
            let file = try UniversalFile(parsing: try Corpus.bytes(path))
            for slice in file.slices {
                guard let trie = try file.image(slice).exportTrie() else { continue }
                let symbols = try trie.allSymbols()
                try body(path, slice, trie, symbols, Set(symbols.map(\.name)))
            }
        }
    }

    @Test func corpusLookupsAgreeWithTheWalk() throws {
        let (found, absent) = try Self.checkLookups(try Corpus.machOFiles())
        print("exports trie: \(found) corpus symbols looked up, \(absent) absent names checked")
        #expect(found > 0)
        #expect(absent > 0)
    }

    @Test func readerFixtureLookupsAgreeWithTheWalk() throws {
        let (found, absent) = try Self.checkLookups(try Self.readerFixtureFiles())
        print("exports trie: \(found) fixture symbols looked up, \(absent) absent names checked")
        #expect(found > 0)
        #expect(absent > 0)
    }

    @Test func imageChoosesTheTrieDyldUses() throws {
        _ = try Self.readerFixtureFiles()
        for (fixture, chained) in [("x86_64-opcodes/libbase.dylib", false), ("x86_64-chained/libbase.dylib", true)] {
            let image = try MachOImage(parsing: try Corpus.bytes(Paths.readerFixtures.appendingPathComponent(fixture).path))
            let trie = try #require(try image.exportTrie())
            let base = try #require(chained ? image.exportsTrie?.dataOffset : image.dyldInfo?.export.dataOffset)
            #expect(trie.view.base == Int(base))
            let tls = try #require(try trie.lookup("_base_tls_counter"))
            #expect(tls.kind == .threadLocal)
            let absolute = try #require(try trie.lookup("_base_absolute"))
            #expect(absolute.kind == .absolute && absolute.imageOffset == 0x4d_4147_4943)
            let weak = try #require(try trie.lookup("_shared_weak_value"))
            #expect(weak.isWeakDefinition && weak.kind == .regular)
        }
    }

    // MARK: - Hand-built tries

    /// A trie placed 0x100 bytes into a buffer, so that error offsets must be absolute.
    static let padding = 0x100
    static func trie(_ bytes: [UInt8]) throws(MachOError) -> ExportTrie {
        try ExportTrie(parsing: try ByteView(Array(repeating: 0xEE, count: padding) + bytes).slice(padding, bytes.count))
    }

    /// Both the walk of every symbol and the lookup of `name` fail at `offset` in the trie.
    static func expectWalkAndLookupFail(_ trie: ExportTrie, lookup name: String, atTrieOffset offset: Int,
                                        sourceLocation: SourceLocation = #_sourceLocation) {
        let walk = #expect(throws: MachOError.self, sourceLocation: sourceLocation) { try trie.allSymbols() }
        #expect(walk?.offset == padding + offset, sourceLocation: sourceLocation)
        let lookup = #expect(throws: MachOError.self, sourceLocation: sourceLocation) { try trie.lookup(name) }
        #expect(lookup?.offset == padding + offset, sourceLocation: sourceLocation)
    }

    @Test func reexportsAndStubAndResolver() throws {
        let trie = try Self.trie(TrieNode(children: [
            ("_plain", TrieNode(terminal: reexportInfo(flags: 0x08, ordinal: 2, importedName: ""))),
            ("_renamed", TrieNode(terminal: reexportInfo(flags: 0x0C, ordinal: 3, importedName: "_original"))),
            ("_stub", TrieNode(terminal: stubAndResolverInfo(flags: 0x10, stub: 0x1000, resolver: 0x2000))),
        ]).encoded())
        let plain = try #require(try trie.lookup("_plain"))
        #expect(plain.definition == .reexport(libraryOrdinal: 2, importedName: ""))
        #expect(plain.isReexport && !plain.isWeakDefinition && plain.imageOffset == nil)
        let renamed = try #require(try trie.lookup("_renamed"))
        #expect(renamed.definition == .reexport(libraryOrdinal: 3, importedName: "_original"))
        #expect(renamed.isWeakDefinition)
        let stub = try #require(try trie.lookup("_stub"))
        #expect(stub.definition == .stubAndResolver(stubOffset: 0x1000, resolverOffset: 0x2000))
        #expect(stub.imageOffset == 0x1000)
        #expect(try trie.allSymbols().map(\.name) == ["_plain", "_renamed", "_stub"])
    }

    @Test func flag0x20IsAFunctionVariantOnlyWithATableIndex() throws {
        let trie = try Self.trie(TrieNode(children: [
            ("_variant", TrieNode(terminal: LEB128.unsigned(0x20) + LEB128.unsigned(0x400) + LEB128.unsigned(3))),
            ("_static", TrieNode(terminal: LEB128.unsigned(0x20) + LEB128.unsigned(0x500))),
        ]).encoded())
        #expect(try trie.lookup("_variant")?.definition == .functionVariant(defaultOffset: 0x400, tableIndex: 3))
        let old = try #require(try trie.lookup("_static"))
        #expect(old.definition == .image(offset: 0x500) && old.flags & ExportedSymbol.staticResolverFlag != 0)
    }

    /// A symbol that is a prefix of others: its own export comes after theirs in the walk,
    /// whether it sits on the shared node or (as ld64 sometimes writes it) behind an
    /// empty edge label.
    @Test func prefixesWalkAfterTheirExtensionsAndEmptyLabelsAreFollowed() throws {
        let trie = try Self.trie(TrieNode(children: [
            ("_f", TrieNode(terminal: regularInfo(flags: 0, offset: 1), children: [
                ("o", TrieNode(terminal: regularInfo(flags: 0, offset: 2), children: [("o", TrieNode(terminal: regularInfo(flags: 0, offset: 3)))])),
            ])),
            ("_kind", TrieNode(children: [
                ("2008", TrieNode(terminal: regularInfo(flags: 0, offset: 4))),
                ("", TrieNode(terminal: regularInfo(flags: 0, offset: 5))),
            ])),
        ]).encoded())
        #expect(try trie.allSymbols().map(\.name) == ["_foo", "_fo", "_f", "_kind2008", "_kind"])
        #expect(try trie.lookup("_kind")?.imageOffset == 5)
        #expect(try trie.lookup("_kind2008")?.imageOffset == 4)
        #expect(try trie.lookup("_fo")?.imageOffset == 2)
        for absent in ["", "_", "_k", "_kind2", "_kind20080", "_fooo", "_g"] {
            #expect(try trie.lookup(absent) == nil, "\(absent)")
        }
    }

    @Test func emptyTries() throws {
        for bytes: [UInt8] in [[], [0x00, 0x00]] {
            let trie = try Self.trie(bytes)
            #expect(try trie.allSymbols().isEmpty)
            #expect(try trie.lookup("_main") == nil)
        }
    }

    @Test func aChildLeadingBackToAnAncestorIsACycle() throws {
        // root: no export, one child "_a" -> node 7; node 7: no export, child "b" -> node 0.
        let bytes: [UInt8] = [0x00, 0x01, 0x5F, 0x61, 0x00, 0x07, 0x00, 0x00, 0x01, 0x62, 0x00, 0x00]
        let trie = try Self.trie(bytes)
        Self.expectWalkAndLookupFail(trie, lookup: "_ab_ab_a", atTrieOffset: 11)
    }

    @Test func aChildThatIsItsOwnParentIsACycle() throws {
        // root -> "_a" -> node 6, which names itself as its child "a".
        let bytes: [UInt8] = [0x00, 0x01, 0x5F, 0x61, 0x00, 0x06, 0x00, 0x01, 0x61, 0x00, 0x06]
        let trie = try Self.trie(bytes)
        Self.expectWalkAndLookupFail(trie, lookup: "_aaaa", atTrieOffset: 10)
    }

    @Test func aNodeWithTwoParentsIsRejectedByTheWalk() throws {
        // root: "_a" -> 12 and "_b" -> 12; node 12 exports offset 0x10.
        let bytes: [UInt8] = [0x00, 0x02, 0x5F, 0x61, 0x00, 0x0C, 0x5F, 0x62, 0x00, 0x0C, 0xEE, 0xEE, 0x02, 0x00, 0x10, 0x00]
        let trie = try Self.trie(bytes)
        #expect(try trie.lookup("_b")?.imageOffset == 0x10)
        let walk = #expect(throws: MachOError.self) { try trie.allSymbols() }
        #expect(walk?.offset == Self.padding + 9)
    }

    @Test func aChildOffsetPastTheTrieIsAnError() throws {
        // root: one child "_a" at 0x40, in a 7-byte trie.
        let bytes: [UInt8] = [0x00, 0x01, 0x5F, 0x61, 0x00, 0x40, 0x00]
        let trie = try Self.trie(bytes)
        Self.expectWalkAndLookupFail(trie, lookup: "_a", atTrieOffset: 5)
        #expect(try trie.lookup("_b") == nil)
    }

    @Test func exportInfoPastTheNodeIsAnError() throws {
        // The root claims 0x30 bytes of export info in a 4-byte trie.
        let error = #expect(throws: MachOError.self) { try Self.trie([0x30, 0x00, 0x10, 0x00]) }
        #expect(error?.offset == Self.padding)
        // A child whose export info leaves no room for its child count.
        let trie = try Self.trie([0x00, 0x01, 0x5F, 0x00, 0x05, 0x02, 0x00, 0x10])
        let walk = #expect(throws: MachOError.self) { try trie.allSymbols() }
        #expect(walk?.offset == Self.padding + 5)
    }

    @Test func overlongULEB128IsAnErrorAtItsOffset() throws {
        // A child offset of eleven 0xFF bytes.
        let bytes: [UInt8] = [0x00, 0x01, 0x5F, 0x00] + Array(repeating: 0xFF, count: 11) + [0x01]
        let trie = try Self.trie(bytes)
        Self.expectWalkAndLookupFail(trie, lookup: "_", atTrieOffset: 4)
    }

    @Test func malformedExportInfoIsAnError() throws {
        let cases: [(name: String, info: [UInt8])] = [
            ("kind 3", LEB128.unsigned(0x03) + LEB128.unsigned(0x10)),
            ("bytes left over", LEB128.unsigned(0x00) + LEB128.unsigned(0x10) + [0x00]),
            ("address missing", LEB128.unsigned(0x00)),
            ("unterminated import name", LEB128.unsigned(0x08) + LEB128.unsigned(1) + [0x5F, 0x61]),
            ("absurd ordinal", LEB128.unsigned(0x08) + LEB128.unsigned(1 << 40) + [0x00]),
        ]
        for (name, info) in cases {
            let trie = try Self.trie(TrieNode(children: [("_x", TrieNode(terminal: info))]).encoded())
            #expect(throws: MachOError.self, "\(name)") { try trie.allSymbols() }
            #expect(throws: MachOError.self, "\(name)") { try trie.lookup("_x") }
        }
    }

    /// Corrupted copies of real tries (a seeded generator, so the run is the same every
    /// time): decoding either succeeds or fails with an offset inside the trie; it never
    /// traps or loops.
    @Test func corruptedTriesFailCleanly() throws {
        let files = try Self.readerFixtureFiles().filter { $0.hasSuffix("libbase.dylib") || $0.hasSuffix("/app") }
        var generator = SplitMix64(seed: 0x5EED_7219)
        var runs = 0, failures = 0
        for path in files {
            let file = try UniversalFile(parsing: try Corpus.bytes(path))
            for slice in file.slices {
                guard let original = try file.image(slice).exportTrie() else { continue }
                let names = try original.allSymbols().map(\.name)
                let bytes = Array(try original.view.bytes(0, original.view.count))
                for _ in 0..<200 {
                    var corrupted = bytes
                    for _ in 0...(generator.next() % 4) {
                        corrupted[Int(generator.next() % UInt64(corrupted.count))] = UInt8(truncatingIfNeeded: generator.next())
                    }
                    runs += 1
                    do {
                        let trie = try Self.trie(corrupted)
                        _ = try trie.allSymbols()
                        for name in names.prefix(8) { _ = try trie.lookup(name) }
                    } catch {
                        failures += 1
                        #expect((Self.padding...(Self.padding + corrupted.count)).contains(error.offset), "\(error)")
                    }
                }
            }
        }
        print("exports trie: \(runs) corrupted tries decoded, \(failures) rejected")
        #expect(runs > 0 && failures > 0)
    }

    @Test func aLeafWithoutExportInfoIsAnError() throws {
        let trie = try Self.trie(TrieNode(children: [("_x", TrieNode())]).encoded())
        #expect(throws: MachOError.self) { try trie.allSymbols() }
        #expect(try trie.lookup("_x") == nil)
    }
}

// MARK: - Building tries

/// A trie node to encode: optional export info and labelled children. Child offsets are
/// written as three-byte (padded) ULEB128s so that one pass can lay the nodes out.
private struct TrieNode {
    var terminal: [UInt8]?
    var children: [(label: String, node: TrieNode)] = []

    init(terminal: [UInt8]? = nil, children: [(String, TrieNode)] = []) {
        self.terminal = terminal
        self.children = children.map { (label: $0.0, node: $0.1) }
    }

    private var headerSize: Int {
        LEB128.unsigned(UInt64(terminal?.count ?? 0)).count + (terminal?.count ?? 0) + 1
            + children.reduce(0) { $0 + $1.label.utf8.count + 1 + 3 }
    }

    private var totalSize: Int { headerSize + children.reduce(0) { $0 + $1.node.totalSize } }

    /// The trie's bytes, nodes in pre-order.
    func encoded() -> [UInt8] {
        var out: [UInt8] = []
        append(to: &out, at: 0)
        return out
    }

    private func append(to out: inout [UInt8], at offset: Int) {
        out += LEB128.unsigned(UInt64(terminal?.count ?? 0)) + (terminal ?? []) + [UInt8(children.count)]
        var childOffset = offset + headerSize
        for child in children {
            out += Array(child.label.utf8) + [0]
            out += [UInt8(childOffset & 0x7F | 0x80), UInt8(childOffset >> 7 & 0x7F | 0x80), UInt8(childOffset >> 14 & 0x7F)]
            childOffset += child.node.totalSize
        }
        childOffset = offset + headerSize
        for child in children {
            child.node.append(to: &out, at: childOffset)
            childOffset += child.node.totalSize
        }
    }
}


private func regularInfo(flags: UInt64, offset: UInt64) -> [UInt8] { LEB128.unsigned(flags) + LEB128.unsigned(offset) }

private func reexportInfo(flags: UInt64, ordinal: UInt64, importedName: String) -> [UInt8] {
    LEB128.unsigned(flags) + LEB128.unsigned(ordinal) + Array(importedName.utf8) + [0]
}

private func stubAndResolverInfo(flags: UInt64, stub: UInt64, resolver: UInt64) -> [UInt8] {
    LEB128.unsigned(flags) + LEB128.unsigned(stub) + LEB128.unsigned(resolver)
}
