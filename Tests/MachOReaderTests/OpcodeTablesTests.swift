import TestSupport
import Foundation
@testable import MachOInspect
import MachOReader
import Testing

/// The dyld-info opcode decoders (rebase, bind, lazy bind, weak bind), checked through
/// `--rebase`, `--bind`, `--lazy-bind` and `--weak-bind` against llvm-objdump-19, on the
/// corpus, on the reader fixtures and on hand-assembled opcode streams.
@Suite(.bounded) struct OpcodeTablesTests {
    static let tables: [InspectTable] = [.rebase, .bind, .lazyBind, .weakBind]

    /// Compares every opcode table of every slice of `paths` with llvm-objdump's.
    static func compareTables(_ paths: [String]) async throws -> Int {
        var comparisons = 0
        for path in paths {
            for arch in try Corpus.architectures(path) {
                for table in tables {
                    let difference = try await inspectDifference(path: path, table: table, arch: arch)
                    #expect(difference == nil, "\(difference ?? "")")
                    comparisons += 1
                }
            }
        }
        return comparisons
    }

    @Test func corpusTablesMatchObjdump() async throws {
        let comparisons = try await Self.compareTables(try Corpus.machOFiles())
        print("opcode tables: \(comparisons) corpus comparisons with llvm-objdump")
        #expect(comparisons > 0)
    }

    @Test func fixtureTablesMatchObjdump() async throws {
        var isDirectory: ObjCBool = false
        let exists = FileManager.default.fileExists(atPath: Paths.readerFixtures.path, isDirectory: &isDirectory)
        try #require(exists && isDirectory.boolValue,
                     "\(Paths.readerFixtures.path) is missing: run tools/build-reader-fixtures (make test does)")
        let comparisons = try await Self.compareTables(try Corpus.machOFiles(under: Paths.readerFixtures))
        print("opcode tables: \(comparisons) fixture comparisons with llvm-objdump")
        #expect(comparisons > 0)
    }

    /// The `--dyld-info` rows of an opcode-based image are exactly the rows of llvm's four
    /// opcode tables (strong definitions aside), address for address. Over the corpus, and
    /// the fixtures when built (``fixtureTablesMatchObjdump()`` fails when they are not).
    @Test func opcodeDyldInfoRowsCoverTheOpcodeTables() async throws {
        var paths = try Corpus.machOFiles()
        if FileManager.default.fileExists(atPath: Paths.readerFixtures.path) {
            paths += try Corpus.machOFiles(under: Paths.readerFixtures)
        }
        var comparisons = 0
        for path in paths {
            let file = try UniversalFile(parsing: try Corpus.bytes(path))
            for slice in file.slices {
                let image = try file.image(slice)
                guard image.dyldInfo != nil, image.chainedFixups == nil else { continue }
                var expected: [UInt64] = []
                for table in Self.tables {
                    let text = try await Oracle.objdump([table.flag, "--arch=\(slice.cpu.name)", path])
                    expected += Self.addresses(inObjdumpTable: text)
                }
                var rows: [DyldInfoRow] = []
                try OpcodeDyldInfoRows(image).forEach { rows.append($0) }
                #expect(rows.map(\.address) == expected.sorted(), "\(path) \(slice.cpu.name)")
                #expect(rows.map(\.address) == rows.map(\.address).sorted())
                comparisons += 1
            }
        }
        print("opcode tables: \(comparisons) opcode-based slices compared with llvm-objdump's four tables")
        #expect(comparisons > 0)
    }

    /// The address column of llvm-objdump's rebase and bind tables (the first `0x` field).
    static func addresses(inObjdumpTable text: String) -> [UInt64] {
        text.split(separator: "\n").compactMap { line in
            line.split(separator: " ").first { $0.hasPrefix("0x") }.flatMap { UInt64($0.dropFirst(2), radix: 16) }
        }
    }
}

// MARK: - Hand-assembled streams

extension OpcodeTablesTests {
    /// A tiny x86_64 dylib around hand-assembled opcode streams: `__TEXT` at 0 with a `__text`
    /// section (llvm numbers only segments that have sections), `__DATA` (segment 1) at 0x1000
    /// holding one 0x1000-byte `__data` section whose pointer slot at offset N holds
    /// 0x1000 + N, and `__LINKEDIT` at file offset 0x2000 holding the rebase, bind, lazy-bind
    /// and weak-bind streams in that order. Ordinal 1 is libSystem, ordinal 2 libc++.
    struct OpcodeImage {
        var rebase: [UInt8] = []
        var bind: [UInt8] = []
        var lazyBind: [UInt8] = []
        var weakBind: [UInt8] = []

        static let linkeditOffset = 0x2000
        var rebaseOffset: Int { Self.linkeditOffset }
        var bindOffset: Int { rebaseOffset + rebase.count }
        var lazyBindOffset: Int { bindOffset + bind.count }
        var weakBindOffset: Int { lazyBindOffset + lazyBind.count }

        var bytes: [UInt8] {
            let dylibs = ["/usr/lib/libSystem.B.dylib", "/usr/lib/libc++.1.dylib"]
            let id = "/tmp/synthetic.dylib"
            var commands: [[UInt8]] = [
                segment("__TEXT", vmAddress: 0, fileOffset: 0, size: 0x1000, fileSize: 0x1000, protection: 5,
                        section: ("__text", 0xf00, 0x100)),
                segment("__DATA", vmAddress: 0x1000, fileOffset: 0x1000, size: 0x1000, fileSize: 0x1000, protection: 3,
                        section: ("__data", 0x1000, 0x1000)),
                segment("__LINKEDIT", vmAddress: 0x2000, fileOffset: UInt64(Self.linkeditOffset), size: 0x1000,
                        fileSize: UInt64(rebase.count + bind.count + lazyBind.count + weakBind.count), protection: 1, section: nil),
            ]
            var dyldInfo = u32(0x8000_0022) + u32(48)
            for (offset, stream) in [(rebaseOffset, rebase), (bindOffset, bind), (weakBindOffset, weakBind), (lazyBindOffset, lazyBind)] {
                dyldInfo += u32(UInt32(offset)) + u32(UInt32(stream.count))
            }
            commands.append(dyldInfo + u32(0) + u32(0))
            commands.append(dylibCommand(0xd, id))
            for dylib in dylibs { commands.append(dylibCommand(0xc, dylib)) }

            let commandBytes = commands.flatMap { $0 }
            var file = u32(0xfeed_facf) + u32(0x0100_0007) + u32(3) + u32(6)
                + u32(UInt32(commands.count)) + u32(UInt32(commandBytes.count)) + u32(0x0010_0085) + u32(0)
            file += commandBytes
            file += [UInt8](repeating: 0, count: 0x1000 - file.count)
            for slot in stride(from: UInt64(0), to: 0x1000, by: 8) { file += u64(0x1000 + slot) }
            return file + rebase + bind + lazyBind + weakBind
        }

        func image() throws -> MachOImage { try MachOImage(parsing: bytes) }

        /// Writes the image to a file named after `name` and returns its path, for the oracle.
        func write(_ name: String) throws -> String {
            let url = FileManager.default.temporaryDirectory.appendingPathComponent("opcode-tables-\(name)-\(getpid()).dylib")
            try Data(bytes).write(to: url)
            return url.path
        }

        private func segment(
            _ name: String, vmAddress: UInt64, fileOffset: UInt64, size: UInt64, fileSize: UInt64, protection: UInt32,
            section: (name: String, address: UInt64, size: UInt64)?
        ) -> [UInt8] {
            var command = u32(0x19) + u32(section == nil ? 72 : 152) + fixed(name) + u64(vmAddress) + u64(size)
                + u64(fileOffset) + u64(fileSize) + u32(protection) + u32(protection) + u32(section == nil ? 0 : 1) + u32(0)
            if let section {
                // A section's file offset is its address's offset in the segment, as linkers lay them out.
                command += fixed(section.name) + fixed(name) + u64(section.address) + u64(section.size)
                    + u32(UInt32(fileOffset + section.address - vmAddress)) + u32(3)
                    + u32(0) + u32(0) + u32(0) + u32(0) + u32(0) + u32(0)
            }
            return command
        }

        private func dylibCommand(_ command: UInt32, _ name: String) -> [UInt8] {
            var text = Array(name.utf8) + [0]
            while (24 + text.count) % 8 != 0 { text.append(0) }
            return u32(command) + u32(UInt32(24 + text.count)) + u32(24) + u32(2) + u32(0x1_0000) + u32(0x1_0000) + text
        }

        private func fixed(_ name: String) -> [UInt8] { Array(name.utf8) + [UInt8](repeating: 0, count: 16 - name.utf8.count) }
        private func u32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) } }
        private func u64(_ value: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) } }
    }

    /// Opcode-stream spelling helpers.
    enum OpcodeBytes {
        static func uleb(_ value: UInt64) -> [UInt8] { LEB128.unsigned(value) }

        static func sleb(_ value: Int64) -> [UInt8] { LEB128.signed(value) }

        /// BIND_OPCODE_SET_SYMBOL_TRAILING_FLAGS_IMM with `flags`.
        static func symbol(_ name: String, flags: UInt8 = 0) -> [UInt8] { [0x40 | flags] + Array(name.utf8) + [0] }
    }

    /// Hand-assembled opcode streams: every opcode, the special cases, and malformed input.
    @Suite(.bounded) struct HandAssembledStreams {
        /// Compares the four opcode tables of `synthetic` with llvm-objdump's.
        func expectObjdumpAgrees(_ synthetic: OpcodeImage, _ name: String) async throws {
            let path = try synthetic.write(name)
            defer { try? FileManager.default.removeItem(atPath: path) }
            for table in OpcodeTablesTests.tables {
                let difference = try await inspectDifference(path: path, table: table, arch: nil)
                #expect(difference == nil, "\(difference ?? "")")
            }
        }

        @Test func negativeAddend() async throws {
            let synthetic = OpcodeImage(
                bind: [0x11] + OpcodeBytes.symbol("_foo") + [0x51, 0x60] + OpcodeBytes.sleb(-8) + [0x71, 0x10, 0x90, 0x00])
            let binds = try synthetic.image().bindFixups(.regular)
            #expect(binds.count == 1)
            #expect(binds.first?.addend == -8)
            #expect(binds.first?.address == 0x1010)
            #expect(binds.first?.libraryOrdinal == 1)
            try await expectObjdumpAgrees(synthetic, "addend")
        }

        @Test func specialOrdinals() async throws {
            for (opcode, ordinal, name) in [(0x30, 0, "this-image"), (0x3f, -1, "main-executable"),
                                            (0x3e, -2, "flat-namespace"), (0x3d, -3, "weak")] as [(UInt8, Int, String)] {
                let synthetic = OpcodeImage(bind: [opcode] + OpcodeBytes.symbol("_s") + [0x51, 0x71, 0x00, 0x90, 0x00])
                let image = try synthetic.image()
                let binds = try image.bindFixups(.regular)
                #expect(binds.map(\.libraryOrdinal) == [ordinal])
                #expect(LibraryShortName.forOrdinal(ordinal, in: image) == name)
                // llvm-objdump 19 rejects the weak-lookup ordinal (-3) in opcode streams.
                if ordinal != -3 { try await expectObjdumpAgrees(synthetic, "ordinal\(-ordinal)") }
            }
            let unknown = OpcodeImage(bind: [0x3c] + OpcodeBytes.symbol("_s") + [0x51, 0x71, 0x00, 0x90, 0x00])
            #expect(throws: MachOError.malformed("BIND_OPCODE_SET_DYLIB_SPECIAL_IMM sets unknown special ordinal -4", at: unknown.bindOffset)) {
                try unknown.image().bindFixups(.regular)
            }
        }

        @Test func bindUlebTimesSkippingUleb() async throws {
            let synthetic = OpcodeImage(
                bind: [0x12] + OpcodeBytes.symbol("_t") + [0x51, 0x71, 0x10, 0xc0] + OpcodeBytes.uleb(3) + OpcodeBytes.uleb(8) + [0x00])
            let binds = try synthetic.image().bindFixups(.regular)
            #expect(binds.map(\.address) == [0x1010, 0x1020, 0x1030])
            #expect(binds.allSatisfy { $0.symbolName == "_t" && $0.libraryOrdinal == 2 && $0.type == .pointer })
            try await expectObjdumpAgrees(synthetic, "bindskip")
        }

        @Test func rebaseUlebTimesSkippingUleb() async throws {
            let synthetic = OpcodeImage(rebase: [0x11, 0x21, 0x00, 0x80] + OpcodeBytes.uleb(4) + OpcodeBytes.uleb(16) + [0x00])
            let rebases = try synthetic.image().rebaseFixups()
            #expect(rebases.map(\.address) == [0x1000, 0x1018, 0x1030, 0x1048])
            #expect(rebases.allSatisfy { $0.segmentIndex == 1 && $0.type == .pointer })
            try await expectObjdumpAgrees(synthetic, "rebaseskip")
        }

        @Test func everyRebaseOpcode() async throws {
            let synthetic = OpcodeImage(rebase: [
                0x11, 0x21, 0x08, // pointer; segment 1, offset 8
                0x52, // DO_REBASE_IMM_TIMES 2: 0x1008, 0x1010
                0x30, 0x10, // ADD_ADDR_ULEB 16: 0x1028
                0x60, 0x02, // DO_REBASE_ULEB_TIMES 2: 0x1028, 0x1030
                0x42, // ADD_ADDR_IMM_SCALED 2: 0x1048
                0x70, 0x08, // DO_REBASE_ADD_ADDR_ULEB 8: 0x1048, then 0x1058
                0x51, 0x00, // DO_REBASE_IMM_TIMES 1: 0x1058; DONE
            ])
            let rebases = try synthetic.image().rebaseFixups()
            #expect(rebases.map(\.address) == [0x1008, 0x1010, 0x1028, 0x1030, 0x1048, 0x1058])
            #expect(rebases.map(\.segmentOffset) == [0x8, 0x10, 0x28, 0x30, 0x48, 0x58])
            try await expectObjdumpAgrees(synthetic, "rebaseall")
        }

        @Test func everyBindOpcode() async throws {
            let synthetic = OpcodeImage(bind: [0x20] + OpcodeBytes.uleb(2) + OpcodeBytes.symbol("_a") + [0x51, 0x71, 0x00,
                0x90, // DO_BIND: 0x1000
                0x80, 0x08, // ADD_ADDR_ULEB 8: 0x1010
                0xa0, 0x08, // DO_BIND_ADD_ADDR_ULEB 8: 0x1010, then 0x1020
                0xb1, // DO_BIND_ADD_ADDR_IMM_SCALED 1: 0x1020, then 0x1030
                0x90, 0x00, // DO_BIND: 0x1030; DONE
            ])
            let binds = try synthetic.image().bindFixups(.regular)
            #expect(binds.map(\.address) == [0x1000, 0x1010, 0x1020, 0x1030])
            #expect(binds.allSatisfy { $0.libraryOrdinal == 2 })
            try await expectObjdumpAgrees(synthetic, "bindall")
        }

        @Test func unknownOpcodesReportTheirOffset() throws {
            let rebase = OpcodeImage(rebase: [0x11, 0x21, 0x00, 0x51, 0xf0])
            #expect(throws: MachOError.malformed("unknown rebase opcode 0xf0", at: rebase.rebaseOffset + 4)) {
                try rebase.image().rebaseFixups()
            }
            let bind = OpcodeImage(bind: [0x11, 0xe0])
            #expect(throws: MachOError.malformed("unknown bind opcode 0xe0", at: bind.bindOffset + 1)) {
                try bind.image().bindFixups(.regular)
            }
            let threaded = OpcodeImage(bind: [0x11, 0xd0, 0x00])
            #expect(throws: MachOError(offset: threaded.bindOffset + 1, .unsupported("threaded bind opcodes (arm64e)"))) {
                try threaded.image().bindFixups(.regular)
            }
        }

        @Test(.bounded(seconds: 60)) func hugeRepeatCountsAreErrors() throws {
            // A 14-byte stream asking for 2^64 - 1 rebases.
            let rebase = OpcodeImage(rebase: [0x11, 0x21, 0x00, 0x60] + OpcodeBytes.uleb(.max))
            #expect(rebase.rebase.count == 14)
            let rebaseError = try #require(throws: MachOError.self) { try rebase.image().rebaseFixups() }
            #expect(rebaseError.offset == rebase.rebaseOffset + 3)

            let bind = OpcodeImage(bind: [0x11] + OpcodeBytes.symbol("_h") + [0x51, 0x71, 0x00, 0xc0] + OpcodeBytes.uleb(1 << 40) + OpcodeBytes.uleb(0))
            let bindError = try #require(throws: MachOError.self) { try bind.image().bindFixups(.regular) }
            #expect(bindError.offset == bind.bindOffset + 8)

            // Each run fits the segment, but together they revisit it far more often than the image has room for.
            let repeated = OpcodeImage(rebase: [0x11] + Array(repeating: [0x21, 0x00, 0x60] + OpcodeBytes.uleb(512), count: 300).flatMap { $0 })
            #expect(throws: MachOError.self) { try repeated.image().rebaseFixups() }
        }

        @Test func fixupsOutsideTheirSegmentAreErrors() throws {
            let pastEnd = OpcodeImage(bind: [0x11] + OpcodeBytes.symbol("_e") + [0x51, 0x71] + OpcodeBytes.uleb(0xffc) + [0x90])
            let pastEndError = try #require(throws: MachOError.self) { try pastEnd.image().bindFixups(.regular) }
            #expect(pastEndError.offset == pastEnd.bindOffset + 9)

            // Segment 7 does not exist: refused where it is set, as dyld does.
            let noSuchSegment = OpcodeImage(rebase: [0x11, 0x27, 0x00, 0x51])
            let segmentError = try #require(throws: MachOError.self) { try noSuchSegment.image().rebaseFixups() }
            #expect(segmentError.offset == noSuchSegment.rebaseOffset + 1)

            let noSegment = OpcodeImage(rebase: [0x11, 0x51])
            #expect(throws: MachOError.self) { try noSegment.image().rebaseFixups() }
        }

        @Test func streamsMayEndWithoutDone() async throws {
            let synthetic = OpcodeImage(
                rebase: [0x11, 0x21, 0x00, 0x51],
                bind: [0x11] + OpcodeBytes.symbol("_a") + [0x51, 0x71, 0x08, 0x90])
            let image = try synthetic.image()
            #expect(try image.rebaseFixups().map(\.address) == [0x1000])
            #expect(try image.bindFixups(.regular).map(\.address) == [0x1008])
            try await expectObjdumpAgrees(synthetic, "nodone")
        }

        @Test func lazyDoneSeparatesEntries() async throws {
            let synthetic = OpcodeImage(lazyBind:
                [0x71, 0x00, 0x11] + OpcodeBytes.symbol("_first") + [0x90, 0x00]
                    + [0x71, 0x08, 0x12] + OpcodeBytes.symbol("_second") + [0x90, 0x00, 0x00, 0x00, 0x00])
            let binds = try synthetic.image().bindFixups(.lazy)
            #expect(binds.map(\.symbolName) == ["_first", "_second"])
            #expect(binds.map(\.libraryOrdinal) == [1, 2])
            #expect(binds.allSatisfy { $0.type == .pointer && $0.stream == .lazy })
            try await expectObjdumpAgrees(synthetic, "lazy")
            // DONE ends the regular stream at once.
            let regular = OpcodeImage(bind: synthetic.lazyBind)
            #expect(try regular.image().bindFixups(.regular).map(\.symbolName) == ["_first"])
        }

        @Test func weakStreamStrongDefinitionsAndWeakImports() async throws {
            let synthetic = OpcodeImage(
                bind: [0x11] + OpcodeBytes.symbol("_maybe", flags: 0x1) + [0x51, 0x71, 0x00, 0x90, 0x00],
                weakBind: OpcodeBytes.symbol("_strong", flags: 0x8) + OpcodeBytes.symbol("_w") + [0x51, 0x71, 0x18, 0x90, 0x00])
            let image = try synthetic.image()
            let weak = try image.bindFixups(.weak)
            #expect(weak.map(\.isStrongDefinition) == [true, false])
            #expect(weak.map(\.symbolName) == ["_strong", "_w"])
            #expect(weak.last?.address == 0x1018)
            #expect(weak.allSatisfy { $0.libraryOrdinal == BindFixup.ordinalWeakLookup })
            #expect(try image.bindFixups(.regular).first?.flags == .weakImport)
            try await expectObjdumpAgrees(synthetic, "weak")

            let ordinalInWeak = OpcodeImage(weakBind: [0x11] + OpcodeBytes.symbol("_w") + [0x51, 0x71, 0x00, 0x90])
            #expect(throws: MachOError.self) { try ordinalInWeak.image().bindFixups(.weak) }
        }

        /// Random streams end in rows or a `MachOError`: never a crash or a hang.
        @Test(.bounded(seconds: 60)) func randomStreamsEndCleanly() throws {
            var generator = SplitMix64(seed: 0x0bc0_de5e_ed00_0001)
            func random() -> UInt64 { generator.next() }
            func stream() -> [UInt8] { (0..<Int(random() % 48)).map { _ in UInt8(truncatingIfNeeded: random()) } }
            var decoded = 0, rejected = 0
            for _ in 0..<2_000 {
                let bytes = OpcodeImage(rebase: stream(), bind: stream(), lazyBind: stream(), weakBind: stream()).bytes
                let image = try MachOImage(parsing: bytes)
                for table in OpcodeTablesTests.tables {
                    do {
                        var text = ""
                        try ObjdumpReport.writeTable(table, image, to: &text)
                        decoded += 1
                    } catch {
                        #expect(error.offset >= 0 && error.offset <= bytes.count)
                        rejected += 1
                    }
                }
                _ = try? OpcodeDyldInfoRows(image)
            }
            #expect(decoded > 0 && rejected > 0)
        }

        @Test func opcodeDyldInfoRowsCarryTheStoredPointer() throws {
            let synthetic = OpcodeImage(
                rebase: [0x11, 0x21, 0x10, 0x51],
                bind: [0x12] + OpcodeBytes.symbol("_b") + [0x51, 0x60] + OpcodeBytes.sleb(-4) + [0x71, 0x08, 0x90],
                weakBind: OpcodeBytes.symbol("_strong", flags: 0x8))
            var rows: [DyldInfoRow] = []
            try OpcodeDyldInfoRows(try synthetic.image()).forEach { rows.append($0) }
            #expect(rows.map(\.address) == [0x1008, 0x1010])
            #expect(rows.map(\.type) == ["bind", "rebase"])
            #expect(rows.map(\.pointer) == [0x1008, 0x1010])
            #expect(rows.map(\.symbol) == ["_b", ""])
            #expect(rows.map(\.targetAddress) == [0, 0x1010])
            #expect(rows.map(\.addend) == [-4, nil])
            #expect(rows.map(\.dylib) == ["libc++", ""])
        }
    }
}

extension MachOImage {
    /// Every rebase of the LC_DYLD_INFO rebase stream, in stream order (empty without one).
    func rebaseFixups() throws(MachOError) -> [RebaseFixup] {
        var fixups: [RebaseFixup] = []
        try forEachRebaseFixup { fixups.append($0) }
        return fixups
    }
}
