import Foundation
import MachOInspect
import TestSupport
import Testing

/// `dyld3 inspect --json` says what llvm-objdump-19's tables say: the same rebase and bind
/// addresses and symbols, the same exported names, one chained fixup per `--dyld-info` row.
/// And it is streamed: a document far larger than the memory bound prints within it.
@Suite(.bounded) struct InspectJSONTests {
    static let files = [
        "opcodes_x86_64/libgfortran.5.dylib",
        "chained_x86_64/libgfortran.5.dylib",
        "chained_arm64/libgfortran.5.dylib",
    ]

    /// The first `0x…` field of each row of `table` (rows follow the table's column header).
    static func objdumpRows(_ arguments: [String], firstRowAfter header: String) async throws -> [[Substring]] {
        let lines = try await Oracle.objdump(arguments).split(separator: "\n")
        guard let start = lines.firstIndex(where: { $0.hasPrefix(header) }) else { return [] }
        return lines[(start + 1)...].map { $0.split(separator: " ", omittingEmptySubsequences: true) }
    }

    static func address(_ field: Substring) -> UInt64? {
        field.hasPrefix("0x") ? UInt64(field.dropFirst(2), radix: 16) : nil
    }

    static func slice(_ path: String) async throws -> [String: Any] {
        let run = try await Dyld3Binary.run(["inspect", "--json", path])
        #expect(run.status == 0, "\(path): \(run.stderr)")
        let slices = try #require(run.json?["slices"] as? [[String: Any]], "\(path): no slices in \(run.stdout.prefix(200))")
        return try #require(slices.first)
    }

    static func records(_ slice: [String: Any], _ key: String) -> [[String: Any]] {
        slice[key] as? [[String: Any]] ?? []
    }

    static func number(_ record: [String: Any], _ key: String) -> UInt64? {
        (record[key] as? NSNumber)?.uint64Value
    }

    @Test(arguments: files) func jsonTablesAgreeWithObjdump(_ name: String) async throws {
        let path = Paths.corpus.appendingPathComponent(name).path
        let slice = try await Self.slice(path)

        let rebaseRows = try await Self.objdumpRows(["--rebase", path], firstRowAfter: "segment")
        let objdumpRebases = rebaseRows.compactMap { $0.lazy.compactMap(Self.address).first }.sorted()
        let jsonRebases = Self.records(slice, "rebases").compactMap { Self.number($0, "address") }.sorted()
        #expect(jsonRebases == objdumpRebases, "\(name): \(jsonRebases.count) rebases, llvm-objdump \(objdumpRebases.count)")

        for (flag, key) in [("--bind", "binds"), ("--lazy-bind", "lazy_binds")] {
            let rows = try await Self.objdumpRows([flag, path], firstRowAfter: "segment")
            let objdump = rows.compactMap { row in row.lazy.compactMap(Self.address).first.map { "\($0) \(row.last!)" } }.sorted()
            let json = Self.records(slice, key).compactMap { record in
                Self.number(record, "address").map { "\($0) \(record["symbol"] as? String ?? "?")" }
            }.sorted()
            #expect(json == objdump, "\(name) \(flag): \(json.count) rows, llvm-objdump \(objdump.count)")
        }

        let exportRows = try await Self.objdumpRows(["--exports-trie", path], firstRowAfter: "Exports trie:")
        let objdumpExports = exportRows.filter { $0.first?.hasPrefix("0x") == true && $0.count > 1 }.map { String($0[1]) }.sorted()
        let jsonExports = Self.records(slice, "exports").compactMap { $0["name"] as? String }.sorted()
        #expect(!jsonExports.isEmpty && jsonExports == objdumpExports, "\(name): \(jsonExports.count) exports, llvm-objdump \(objdumpExports.count)")

        if let chained = slice["chained_fixups"] as? [String: Any] {
            let rows = try await Self.objdumpRows(["--dyld-info", path], firstRowAfter: "segment")
            let objdump = rows.compactMap { $0.count > 2 ? Self.address($0[2]) : nil }.sorted()
            let json = (chained["fixups"] as? [[String: Any]] ?? []).compactMap { Self.number($0, "address") }.sorted()
            #expect(!json.isEmpty && json == objdump, "\(name): \(json.count) chained fixups, llvm-objdump \(objdump.count) rows")
        } else {
            #expect(!name.hasPrefix("chained"), "\(name): no chained_fixups member")
        }
    }

    /// A linear export trie of 16,000 nodes exporting every prefix: 128 MB of names, so a
    /// document built in memory would pass the bound twice; streamed, it costs one name.
    @Test func aJSONDocumentOfHundredsOfMegabytesPrintsInBoundedMemory() async throws {
        let directory = try HugeInputTests.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("linear.dylib").path
        let count = 16_000
        try Data(try HugeInputTests.dylib(withTrie: HugeInputTests.linearTrie(count: count, everyNodeExports: true)))
            .write(to: URL(fileURLWithPath: path))
        let run = try await PeakMemory.run(try Dyld3Binary.path(), ["inspect", "--json", "--exports-trie", path])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.peakResidentBytes < HugeInputTests.memoryBound, "peak RSS \(run.peakResidentBytes >> 20) MB")
        print("inspect --json of \((count * count / 2) >> 20) MB of exported names: peak RSS \(run.peakResidentBytes >> 20) MB")
    }
}
