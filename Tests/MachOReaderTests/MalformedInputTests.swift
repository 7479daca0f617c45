import Foundation
import TestSupport
import MachOInspect
import MachOReader
import Testing

/// Damaged input must give a clean `MachOError` (with a file offset) or a successful
/// parse: never a crash, a hang, or an unbounded allocation. Every decoder is exercised
/// through `ObjdumpReport` with every table, which walks every fixup and export.
@Suite(.bounded) struct MalformedInputTests {
    /// Parses everything the reader can parse, on every slice.
    static func decodeEverything(_ bytes: [UInt8]) -> Result<String, MachOError> {
        do {
            return .success(try ObjdumpReport.render(
                path: "damaged", bytes: bytes, tables: Set(InspectTable.allCases), arch: .all))
        } catch {
            return .failure(error)
        }
    }


    @Test func everyTruncationOfASmallFixture() throws {
        let fixtures = try Corpus.machOFiles(under: Paths.readerFixtures)
        // The smallest thin fixture with rebases, binds and exports keeps the run short.
        let candidates = try fixtures.map { ($0, try Corpus.bytes($0)) }
            .filter { _, bytes in
                guard let image = try? MachOImage(parsing: bytes), image.dyldInfo != nil,
                      let rebases = try? image.rebaseFixups(), let binds = try? image.bindFixups(.regular),
                      let exports = try? image.exportTrie()?.allSymbols() else { return false }
                return !rebases.isEmpty && !binds.isEmpty && !exports.isEmpty
            }
            .sorted { $0.1.count < $1.1.count }
        let (path, bytes) = try #require(candidates.first)
        guard case .success = Self.decodeEverything(bytes) else {
            Issue.record("\(path) does not decode intact")
            return
        }
        var errors = 0
        for length in 0..<bytes.count {
            if case let .failure(error) = Self.decodeEverything(Array(bytes[0..<length])) {
                #expect(error.offset >= 0 && error.offset <= bytes.count)
                errors += 1
            }
        }
        // Cutting into the load commands or __LINKEDIT must be noticed.
        #expect(errors > 0)
        print("malformed: \(bytes.count) truncations of \(path): \(errors) clean errors, \(bytes.count - errors) parsed")
    }

    @Test func seededByteFlipsAcrossTheCorpus() throws {
        var rng = SplitMix64(seed: 0x5EED_D1D3)
        var tried = 0, rejected = 0
        for path in try Corpus.machOFiles() {
            let original = try Corpus.bytes(path)
            let file = try UniversalFile(parsing: original)
            // Damage where the reader looks: the load commands and the fixup/export metadata.
            var hot: [Range<Int>] = []
            for slice in file.slices {
                let image = try file.image(slice)
                hot.append(slice.offset..<(slice.offset + 32 + Int(image.header.commandsSize)))
                if let linkedit = image.segments.first(where: { $0.name == "__LINKEDIT" }) {
                    let start = slice.offset + Int(linkedit.fileOffset)
                    let end = min(slice.offset + slice.size, start + Int(linkedit.fileSize))
                    if start < end { hot.append(start..<end) }
                }
            }
            let mutations = original.count > 1_000_000 ? 60 : 200
            for _ in 0..<mutations {
                var damaged = original
                for _ in 0..<Int.random(in: 1...4, using: &rng) {
                    let range = hot[Int.random(in: 0..<hot.count, using: &rng)]
                    let offset = Int.random(in: range, using: &rng)
                    damaged[offset] ^= UInt8.random(in: 1...255, using: &rng)
                }
                tried += 1
                if case let .failure(error) = Self.decodeEverything(damaged) {
                    #expect(error.offset >= 0 && error.offset <= damaged.count, "\(path): \(error)")
                    rejected += 1
                }
            }
        }
        #expect(tried >= 3000)
        #expect(rejected > 0)
        print("malformed: \(tried) seeded byte-flip mutations of the corpus: \(rejected) clean errors, \(tried - rejected) parsed")
    }

    @Test func absurdCountsAreRefusedBeforeAllocating() throws {
        // A header claiming 2^32-1 load commands in 32 bytes.
        var header: [UInt8] = [0xcf, 0xfa, 0xed, 0xfe, 7, 0, 0, 1, 3, 0, 0, 0, 2, 0, 0, 0]
        header += [0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
        #expect(throws: MachOError.self) { try MachOImage(parsing: header) }
        // A universal header claiming 2^32-1 architectures.
        let fat: [UInt8] = [0xca, 0xfe, 0xba, 0xbe, 0xff, 0xff, 0xff, 0xff]
        #expect(throws: MachOError.self) { try UniversalFile(parsing: fat) }
    }

    @Test func errorsNameTheOffset() throws {
        // A load command whose cmdsize runs past the end of the file: the error points at
        // that command. (Past sizeofcmds alone is allowed, as LLVM allows it.)
        var image: [UInt8] = [0xcf, 0xfa, 0xed, 0xfe, 7, 0, 0, 1, 3, 0, 0, 0, 2, 0, 0, 0]
        image += [1, 0, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
        image += [0x1b, 0, 0, 0, 40, 0, 0, 0] + [UInt8](repeating: 0, count: 16)
        let error = try #require(throws: MachOError.self) { try MachOImage(parsing: image) }
        #expect(error.offset == 32)
        #expect(error.inFile("x").description.contains("x: offset 0x20"))
    }

    /// LLVM's walk stops at an LC_IDENT: a dylib whose LC_ID_DYLIB comes after one has no
    /// LC_ID_DYLIB for llvm-objdump-19, and none for the reader either. (Found by the
    /// agreement test: a flip turned a segment command of a real dylib into LC_IDENT.)
    @Test func identHidesLaterIDDylibAsItDoesForLLVM() async throws {
        let path = Paths.corpus.appendingPathComponent("graph_arm64_pillow/PIL/.dylibs/libsharpyuv.0.dylib").path
        var bytes = try Corpus.bytes(path)
        let image = try MachOImage(parsing: bytes)
        let identIndex = try #require(image.loadCommands.firstIndex { $0.type == .segment64 })
        #expect(image.loadCommands.firstIndex { $0.type == .idDylib }! > identIndex)
        bytes[image.loadCommands[identIndex].offset] = 0x8  // LC_IDENT
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("ident-\(getpid()).dylib")
        try Data(bytes).write(to: scratch)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let objdump = try await Oracle.objdumpAccepts(["--private-headers", scratch.path])
        #expect(!objdump.accepted && objdump.message.contains("no LC_ID_DYLIB"), "\(objdump.message)")
        let error = try #require(throws: MachOError.self) { try MachOImage(parsing: bytes) }
        #expect(error.description.contains("without an LC_ID_DYLIB load command before its first LC_IDENT"), "\(error)")
    }
}
