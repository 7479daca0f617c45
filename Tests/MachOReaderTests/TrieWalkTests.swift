import TestSupport
import Foundation
@testable import MachOReader
import Testing

/// The raw-memory trie walk a loader's lookups take (`UnsafeTrieWalk`) against the checked
/// walk and the full enumeration: it must answer for every trie a linker wrote (else the
/// fast path would never run), find each symbol at the node the enumeration reports, agree
/// with the checked walk on absent names, and hand anything it does not answer for to the
/// checked walk.
@Suite(.bounded) struct TrieWalkTests {
    /// Per slice of `files`: each exported symbol and its neighbours (absent names) looked
    /// up by the raw walk and by the checked walk. Returns (found, absent, irregular).
    static func compare(_ files: [String]) throws -> (found: Int, absent: Int, irregular: Int) {
        var found = 0, absent = 0, irregular = 0
        try ExportTrieTests.forEachTrie(files) { path, _, trie, symbols, names throws in
            var scratch = ExportTrie.LookupPath()
            for symbol in symbols {
                let utf8 = Array(symbol.name.utf8)
                var candidates = [(utf8, true), (utf8 + [0x5F], false), (utf8 + [0x7F], false)]
                if !utf8.isEmpty { candidates.append((Array(utf8.dropLast()), false)) }
                for (name, exported) in candidates where exported || !names.contains(String(decoding: name, as: UTF8.self)) {
                    let raw = trie.view.storage.withBytes(trie.view.base, trie.view.count) { bytes in
                        name.withUnsafeBytes { UnsafeTrieWalk.find($0, in: bytes) }
                    }
                    let checked = try trie.checkedLookup(ByteView(name), path: &scratch)
                    switch raw {
                    case let .found(node, _, _, plain):
                        #expect(exported && node == symbol.nodeOffset && checked?.nodeOffset == node, "\(path): \(symbol.name)")
                        if let plain {
                            // The in-place decode of a plain terminal: what the checked decode says.
                            #expect(checked?.flags == plain.flags && checked?.imageOffset == plain.offset
                                    && symbol.definition == .image(offset: plain.offset), "\(path): \(symbol.name)")
                        }
                        found += 1
                    case .notFound:
                        #expect(!exported && checked == nil, "\(path): \(String(decoding: name, as: UTF8.self))")
                        absent += 1
                    case .irregular:
                        irregular += 1
                    }
                }
            }
        }
        return (found, absent, irregular)
    }

    @Test func corpusTriesAreWalkedInRawMemory() throws {
        let (found, absent, irregular) = try Self.compare(try Corpus.machOFiles())
        print("trie walk: \(found) corpus symbols found, \(absent) absent names, \(irregular) handed to the checked walk")
        #expect(found > 0)
        #expect(absent > 0)
        #expect(irregular == 0)
    }

    @Test func readerFixtureTriesAreWalkedInRawMemory() throws {
        let (found, absent, irregular) = try Self.compare(try ExportTrieTests.readerFixtureFiles())
        #expect(found > 0)
        #expect(absent > 0)
        #expect(irregular == 0)
    }

    static func rawWalk(_ trieBytes: [UInt8], _ name: String) -> UnsafeTrieWalk.Result {
        trieBytes.withUnsafeBytes { bytes in Array(name.utf8).withUnsafeBytes { UnsafeTrieWalk.find($0, in: bytes) } }
    }

    /// A well-formed trie whose child lies before its parent: the raw walk answers, as the
    /// checked walk does.
    @Test func aChildBeforeItsParentIsFollowed() throws {
        // Node 0 (the root): no export, child "_a" -> node 10. Node 6: exports offset 0x20,
        // no children. Node 10: no export, child "b" -> node 6, before it.
        let trieBytes: [UInt8] = [0x00, 0x01, 0x5F, 0x61, 0x00, 0x0A,
                                  0x02, 0x00, 0x20, 0x00,
                                  0x00, 0x01, 0x62, 0x00, 0x06]
        guard case let .found(node, _, _, plain) = Self.rawWalk(trieBytes, "_ab") else {
            Issue.record("the raw walk did not find _ab")
            return
        }
        #expect(node == 6 && plain?.offset == 0x20)
        guard case .notFound = Self.rawWalk(trieBytes, "_a") else {
            Issue.record("the raw walk found _a, which is not exported")
            return
        }
        let trie = try ExportTrie(parsing: ByteView(trieBytes))
        #expect(try trie.lookup("_ab")?.imageOffset == 0x20)
        #expect(try trie.lookup("_a") == nil)
    }

    /// A cycle on the path is left to the checked walk, which reports it.
    @Test func aCycleGoesToTheCheckedWalk() throws {
        // root: no export, one child "_a" -> node 7; node 7: no export, child "b" -> node 0.
        let trieBytes: [UInt8] = [0x00, 0x01, 0x5F, 0x61, 0x00, 0x07, 0x00, 0x00, 0x01, 0x62, 0x00, 0x00]
        guard case .irregular = Self.rawWalk(trieBytes, "_ab_ab_a") else {
            Issue.record("the raw walk answered for a cyclic path")
            return
        }
        let trie = try ExportTrie(parsing: ByteView(trieBytes))
        #expect(throws: MachOError.self) { try trie.lookup("_ab_ab_a") }
    }
}
