import Foundation
import MachOInspect
import MachOReader
import TestSupport
import Testing

/// Damaged real files: the reader (what `dyld3 inspect --arch all` runs) must accept
/// exactly the files `llvm-objdump-19 --macho --private-headers --arch=all` accepts.
///
/// `--private-headers` makes llvm-objdump open every slice, which runs all of LLVM's
/// structural checks (the `MachOObjectFile` constructor and the universal header checks);
/// the fixup and export tables it parses lazily, only when a table flag asks for them, so
/// they are not part of this comparison (`MalformedInputTests` covers their decoding).
///
/// Per corpus file: every truncation at a range boundary the file's load commands name
/// (each range's end and one byte short of it), random truncations, and seeded 1–4 byte
/// flips, mostly in the headers and load commands. `DYLD3_AGREEMENT_CASES` sets the random
/// truncations and flips per file (default 60 each).
@Suite(.bounded) struct StructureAgreementTests {
    struct Case: Sendable {
        let file: String
        let mutation: String
        let bytes: [UInt8]
    }

    struct Outcome: Sendable {
        /// The case's file and mutation (not its bytes: outcomes outlive them).
        let file: String
        let mutation: String
        let size: Int
        let objdump: (accepted: Bool, message: String)
        let reader: Result<Void, MachOError>
        var readerAccepted: Bool { if case .success = reader { true } else { false } }
        var agrees: Bool { objdump.accepted == readerAccepted }
    }

    static var casesPerFile: Int {
        ProcessInfo.processInfo.environment["DYLD3_AGREEMENT_CASES"].flatMap(Int.init) ?? 60
    }

    /// File offsets where a range named by a load command ends, across every slice.
    static func rangeEnds(_ bytes: [UInt8]) throws -> Set<Int> {
        let file = try UniversalFile(parsing: bytes)
        var ends: Set<Int> = []
        for slice in file.slices {
            let image = try file.image(slice)
            var ranges: [(UInt64, UInt64)] = [(0, UInt64(MachHeader.size) + UInt64(image.header.commandsSize))]
            for segment in image.segments {
                ranges.append((segment.fileOffset, segment.fileSize))
                ranges += segment.sections.map { (UInt64($0.fileOffset), $0.size) }
            }
            let blobs = [image.chainedFixups, image.exportsTrie, image.functionStarts, image.codeSignature].compactMap { $0 }
            ranges += blobs.map { (UInt64($0.dataOffset), UInt64($0.dataSize)) }
            if let symtab = image.symtab {
                ranges.append((UInt64(symtab.symbolOffset), UInt64(symtab.symbolCount) * 16))
                ranges.append((UInt64(symtab.stringOffset), UInt64(symtab.stringSize)))
            }
            if let info = image.dyldInfo {
                ranges += [(info.rebase.dataOffset, info.rebase.dataSize), (info.bind.dataOffset, info.bind.dataSize),
                           (info.lazyBind.dataOffset, info.lazyBind.dataSize), (info.export.dataOffset, info.export.dataSize)]
                    .map { (UInt64($0.0), UInt64($0.1)) }
            }
            for (offset, size) in ranges where size > 0 {
                let end = slice.offset + Int(offset + size)
                if end <= bytes.count { ends.formUnion([end - 1, end]) }
            }
        }
        return ends.filter { $0 < bytes.count }
    }

    static func cases(for path: String, count: Int) throws -> [Case] {
        let original = try Corpus.bytes(path)
        // Seeded by the path inside the corpus, so every machine draws the same cases.
        let corpusPath = path.range(of: "/corpus/").map { String(path[$0.upperBound...]) } ?? path
        var rng = SplitMix64(seed: 0xA6EE_0000 ^ UInt64(truncatingIfNeeded: corpusPath.utf8.reduce(0) { $0 &* 31 &+ Int($1) }))
        var cases = try rangeEnds(original).sorted().map {
            Case(file: path, mutation: "truncated to \($0) bytes (a range boundary)", bytes: Array(original[0..<$0]))
        }
        for _ in 0..<count {
            let length = Int.random(in: 0..<original.count, using: &rng)
            cases.append(Case(file: path, mutation: "truncated to \(length) bytes", bytes: Array(original[0..<length])))
        }
        let file = try UniversalFile(parsing: original)
        let commands = try file.slices.map { slice in
            slice.offset..<(slice.offset + MachHeader.size + Int(try file.image(slice).header.commandsSize))
        }
        for _ in 0..<count {
            var damaged = original
            var flips: [String] = []
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                let offset = Int.random(in: 0..<10, using: &rng) < 8
                    ? Int.random(in: commands[Int.random(in: 0..<commands.count, using: &rng)], using: &rng)
                    : Int.random(in: 0..<original.count, using: &rng)
                let mask = UInt8.random(in: 1...255, using: &rng)
                damaged[offset] ^= mask
                flips.append("0x\(String(offset, radix: 16))^0x\(String(mask, radix: 16))")
            }
            cases.append(Case(file: path, mutation: "bytes flipped: " + flips.joined(separator: " "), bytes: damaged))
        }
        return cases
    }

    /// Runs both sides on one case; the damaged bytes go to a scratch file for llvm-objdump.
    static func run(_ testCase: Case, scratch: URL) async throws -> Outcome {
        try Data(testCase.bytes).write(to: scratch)
        let objdump = try await Oracle.objdumpAccepts(["--private-headers", "--arch=all", scratch.path])
        let reader: Result<Void, MachOError>
        do {
            _ = try ImageSummary.render(path: testCase.file, bytes: testCase.bytes, arch: .all)
            reader = .success(())
        } catch {
            reader = .failure(error)
        }
        return Outcome(file: testCase.file, mutation: testCase.mutation, size: testCase.bytes.count, objdump: objdump, reader: reader)
    }

    @Test func readerAgreesWithObjdumpOnDamagedCorpusFiles() async throws {
        // Cases are drawn per file inside each worker: holding every damaged copy of the
        // corpus at once would take gigabytes.
        let files = try Corpus.machOFiles()
        let directory = URL(fileURLWithPath: try Scratch.directory("agreement"))
        defer { Scratch.remove(directory.path) }

        // Two workers: llvm-objdump is a process per case.
        let workers = 2
        var outcomes: [Outcome] = []
        var failures: [String] = []
        try await withThrowingTaskGroup(of: ([Outcome], [String]).self) { group in
            for worker in 0..<workers {
                group.addTask {
                    let scratch = directory.appendingPathComponent("case-\(worker)")
                    var done: [Outcome] = [], failed: [String] = []
                    for index in stride(from: worker, to: files.count, by: workers) {
                        for testCase in try Self.cases(for: files[index], count: Self.casesPerFile) {
                            do {
                                done.append(try await Self.run(testCase, scratch: scratch))
                            } catch {
                                failed.append("\(testCase.file) \(testCase.mutation): \(error)")
                            }
                        }
                    }
                    return (done, failed)
                }
            }
            for try await (done, failed) in group {
                outcomes += done
                failures += failed
            }
        }
        #expect(failures.isEmpty, "\(failures.prefix(3))")
        let disagreements = outcomes.filter { !$0.agrees }
        for outcome in disagreements.prefix(20) {
            Issue.record("""
                \(outcome.file) \(outcome.mutation): llvm-objdump \(outcome.objdump.accepted ? "accepts" : "refuses: \(outcome.objdump.message)"); \
                reader \(outcome.readerAccepted ? "accepts" : "refuses")
                """)
        }
        let bothAccept = outcomes.filter { $0.agrees && $0.objdump.accepted }.count
        let bothRefuse = outcomes.filter { $0.agrees && !$0.objdump.accepted }.count
        // The damage must exercise both outcomes, or agreement proves nothing.
        #expect(bothAccept > 0 && bothRefuse > 0)
        // Every refusal is one clean error with an offset inside the file.
        for outcome in outcomes {
            if case let .failure(error) = outcome.reader {
                #expect(error.offset >= 0 && error.offset <= outcome.size, "\(outcome.mutation): \(error)")
            }
        }
        print("agreement: \(outcomes.count) damaged corpus files, \(outcomes.count - disagreements.count) agree (\(bothAccept) accepted by both, \(bothRefuse) refused by both), \(disagreements.count) disagree")
    }
}
