import Foundation
import MachOInspect
import MachOReader
import ProcessRunner
import TestSupport
import Testing

/// Huge inputs cost what reading them needs, not what the file claims: `dyld3 inspect` maps
/// files read-only and streams its tables, so a 4 GB sparse file costs its header page and
/// an export trie whose names add up to gigabytes costs its longest name. Memory is the
/// child's own peak RSS (``PeakMemory``: `wait4` from a small harness), a resource bound,
/// not a timing. Inputs are made here:
/// sparse files with `ftruncate`, tries spliced into a reader fixture.
@Suite(.bounded) struct HugeInputTests {
    /// The peak RSS allowed to one `dyld3 inspect` (the debug build's floor is about 25 MB).
    static let memoryBound = 100 << 20
    static let fourGigabytes: UInt64 = 4 << 30

    static func scratchDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("HugeInputTests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    /// `bytes` written to `path`, then the file extended with a hole to `size` bytes.
    static func writeSparse(_ bytes: [UInt8], to path: String, size: UInt64) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        try handle.truncate(atOffset: size)
    }

    /// llvm-objdump's stderr for `arguments` (it reports some refusals with exit status 0).
    static func objdumpErrors(_ arguments: [String]) async throws -> String {
        try await ProcessRunner.run(Paths.objdump, ["--macho"] + arguments, error: .captured).error
    }

    // MARK: - A 4 GB sparse file

    @Test func fourGigabytesOfZerosAreRefusedInOneLineAndBoundedMemory() async throws {
        let directory = try Self.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("zeros.dylib").path
        try Self.writeSparse([], to: path, size: Self.fourGigabytes)

        let objdump = try await Self.objdumpErrors(["--private-headers", path])
        #expect(objdump.contains("is not a Mach-O file"), "llvm-objdump accepted it: \(objdump)")
        for flags in [[], ["--exports-trie"], ["--bind", "--rebase"], ["--dyld-info"], ["--json"], ["--arch", "all"]] {
            let run = try await PeakMemory.run(try Dyld3Binary.path(), ["inspect"] + flags + [path])
            let lines = run.stderr.split(separator: "\n")
            #expect(run.status == 1, "\(flags): status \(run.status)")
            #expect(lines.count == 1 && lines[0].contains(path) && lines[0].contains("offset 0x0")
                && lines[0].contains("not a Mach-O file"), "\(flags): \(run.stderr)")
            #expect(run.peakResidentBytes < Self.memoryBound, "\(flags): peak RSS \(run.peakResidentBytes >> 20) MB")
            print("4 GB sparse file, inspect \(flags): status \(run.status), peak RSS \(run.peakResidentBytes >> 20) MB")
        }
    }

    /// The largest corpus image followed by a hole up to 4 GB: every table reads as in the
    /// original (llvm-objdump's rows), and memory follows the pages read.
    @Test func aCorpusImageInsideFourGigabytesReadsLikeObjdumpInBoundedMemory() async throws {
        let corpusFile = Paths.corpus.appendingPathComponent("opcodes_x86_64/libgfortran.5.dylib").path
        let directory = try Self.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("libgfortran.5.dylib").path
        try Self.writeSparse(try Corpus.bytes(corpusFile), to: path, size: Self.fourGigabytes)

        for table in [InspectTable.bind, .rebase, .exportsTrie, .dyldInfo] {
            let expected = Oracle.normalized(try await Oracle.objdump([table.flag, path]))
            let actual = try await Dyld3Binary.run(["inspect", table.flag, path])
            #expect(actual.status == 0, "\(table.flag): \(actual.stderr)")
            // Opcode-based: llvm-objdump prints only --dyld-info's titles; inspect adds rows.
            let compared = table == .dyldInfo ? 3 : expected.count
            let agrees = Array(Oracle.normalized(actual.stdout).prefix(compared)) == Array(expected.prefix(compared))
            #expect(agrees, "\(table.flag): inspect's rows differ from llvm-objdump's")
            let run = try await PeakMemory.run(try Dyld3Binary.path(), ["inspect", table.flag, path])
            #expect(run.status == 0, "\(table.flag): \(run.stderr)")
            #expect(run.peakResidentBytes < Self.memoryBound, "\(table.flag): peak RSS \(run.peakResidentBytes >> 20) MB")
            print("corpus image + 4 GB hole, inspect \(table.flag): peak RSS \(run.peakResidentBytes >> 20) MB")
        }
    }

    // MARK: - Streaming

    /// What `dyld3 inspect` streams through its 64 KiB stdout buffer is byte for byte the
    /// text rendered into one string, for every table at once on the largest corpus files
    /// (megabytes of rows, so many buffer boundaries).
    @Test func streamedTablesEqualTheRenderedText() async throws {
        let largest = try Corpus.machOFiles()
            .map { ($0, (try FileManager.default.attributesOfItem(atPath: $0)[.size] as? Int) ?? 0) }
            .sorted { $0.1 > $1.1 }.prefix(3).map(\.0)
        let tables = InspectTable.allCases
        for path in largest {
            let rendered = try ObjdumpReport.render(path: path, bytes: try Corpus.bytes(path), tables: Set(tables), arch: .all)
            let streamed = try await Dyld3Binary.run(["inspect", "--arch", "all"] + tables.map(\.flag) + [path])
            #expect(streamed.status == 0, "\(path): \(streamed.stderr)")
            #expect(rendered.utf8.count > 2 * 65_536)
            let equal = streamed.stdout == rendered
            #expect(equal, "\(path): streamed \(streamed.stdout.utf8.count) bytes, rendered \(rendered.utf8.count)")
        }
    }

    // MARK: - Linear export tries

    /// A linear trie of `count` nodes, each node's one child through the edge `a`: names
    /// `a`, `aa`, … up to `count - 1` bytes. Every node exports its name (offset 0), or
    /// only the last. Child offsets are 4-byte ULEB128s so each node's size is known.
    static func linearTrie(count: Int, everyNodeExports: Bool) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count * 11)
        for index in 0..<count {
            let last = index == count - 1
            bytes += everyNodeExports || last ? [2, 0, 0] : [0]
            if last {
                bytes.append(0)
            } else {
                bytes += [1, UInt8(ascii: "a"), 0]
                let child = UInt32(bytes.count + 4)
                bytes += [UInt8(child & 0x7f) | 0x80, UInt8(child >> 7 & 0x7f) | 0x80, UInt8(child >> 14 & 0x7f) | 0x80, UInt8(child >> 21 & 0x7f)]
            }
        }
        return bytes
    }

    /// A chained reader fixture whose LC_DYLD_EXPORTS_TRIE names `trie`, appended to the file.
    static func dylib(withTrie trie: [UInt8]) throws -> [UInt8] {
        let fixture = Paths.readerFixtures.appendingPathComponent("arm64-chained/libbase.dylib").path
        guard FileManager.default.fileExists(atPath: fixture) else {
            throw Oracle.Failure(description: "\(fixture) is missing: run tools/build-reader-fixtures (make test does)")
        }
        var bytes = try Corpus.bytes(fixture)
        let image = try MachOImage(parsing: bytes)
        let command = try #require(image.loadCommands.first { $0.type == .dyldExportsTrie })
        bytes += Array(repeating: 0, count: (8 - bytes.count % 8) % 8)
        for (field, value) in [(8, UInt32(bytes.count)), (12, UInt32(trie.count))] {
            withUnsafeBytes(of: value.littleEndian) { bytes.replaceSubrange((command.offset + field)..<(command.offset + field + 4), with: $0) }
        }
        return bytes + trie
    }

    @Test func linearTrieExportingEveryPrefixMatchesObjdump() async throws {
        let directory = try Self.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("linear.dylib").path
        try Data(try Self.dylib(withTrie: Self.linearTrie(count: 2_000, everyNodeExports: true))).write(to: URL(fileURLWithPath: path))
        let expected = Oracle.normalized(try await Oracle.objdump(["--exports-trie", path]))
        let actual = try await Dyld3Binary.run(["inspect", "--exports-trie", path])
        #expect(actual.status == 0, "\(actual.stderr)")
        #expect(expected.count > 2_000)
        let agrees = Oracle.normalized(actual.stdout) == expected
        #expect(agrees, "inspect's rows differ from llvm-objdump's")
    }

    /// A 1.2 MB linear trie whose 130,000 names add up to 8.5 GB of text (the file that made
    /// inspect try to allocate 7.9 GB): it prints in bounded memory.
    @Test func linearTrieOfGigabytesOfNamesPrintsInBoundedMemory() async throws {
        let directory = try Self.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("linear.dylib").path
        let trie = Self.linearTrie(count: 130_000, everyNodeExports: true)
        try Data(try Self.dylib(withTrie: trie)).write(to: URL(fileURLWithPath: path))
        let run = try await PeakMemory.run(try Dyld3Binary.path(), ["inspect", "--exports-trie", path])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.peakResidentBytes < Self.memoryBound, "peak RSS \(run.peakResidentBytes >> 20) MB")
        print("linear trie (\(trie.count) bytes, 130,000 names, 8.5 GB of text): peak RSS \(run.peakResidentBytes >> 20) MB")
    }

    /// One name 170,000 bytes long, 170,000 nodes deep: the one line, in bounded memory.
    @Test func deepLinearTrieWithOneLongName() async throws {
        let directory = try Self.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("deep.dylib").path
        let depth = 170_000
        try Data(try Self.dylib(withTrie: Self.linearTrie(count: depth, everyNodeExports: false))).write(to: URL(fileURLWithPath: path))
        let actual = try await Dyld3Binary.run(["inspect", "--exports-trie", path])
        #expect(actual.status == 0, "\(actual.stderr)")
        let rows = actual.lines.filter { $0.hasPrefix("0x") }
        #expect(rows.count == 1)
        let name = rows.first?.split(separator: " ").last.map(String.init) ?? ""
        #expect(name.utf8.count == depth - 1 && name.utf8.allSatisfy { $0 == UInt8(ascii: "a") }, "a name of \(name.utf8.count) bytes")
        let run = try await PeakMemory.run(try Dyld3Binary.path(), ["inspect", "--exports-trie", path])
        #expect(run.peakResidentBytes < Self.memoryBound, "peak RSS \(run.peakResidentBytes >> 20) MB")
    }

    @Test func trieDeeperThanTheCapIsRefusedWithItsOffset() throws {
        let padding = 0x40
        let bytes = Self.linearTrie(count: ExportTrie.maxDepth + 1, everyNodeExports: false)
        let trie = try ExportTrie(parsing: try ByteView(Array(repeating: 0, count: padding) + bytes).slice(padding, bytes.count))
        var exported = 0
        #expect {
            try trie.forEachSymbol { _ in exported += 1 }
        } throws: { error in
            guard let error = error as? MachOError, case let .malformed(what) = error.reason else { return false }
            return what == "export trie is deeper than \(ExportTrie.maxDepth) nodes" && error.offset > padding && error.offset < padding + bytes.count
        }
        #expect(exported == 0)
    }
}
