import TestSupport
import Foundation
import MachOInspect
@testable import MachOReader
import Testing

/// LC_DYLD_CHAINED_FIXUPS: the `--chained-fixups` and `--dyld-info` tables against
/// llvm-objdump-19 on every corpus file and reader fixture, and the decoder's bit layouts
/// and failure modes on hand-built bytes.
@Suite(.bounded) struct ChainedFixupsTests {
    // MARK: - Against the oracle

    /// Compares every slice of `files`: `--chained-fixups` always, `--dyld-info` when the
    /// slice has chained fixups. Returns the number of comparisons and of chained slices.
    static func compareWithObjdump(_ files: [String]) async throws -> (comparisons: Int, chainedSlices: Int) {
        var comparisons = 0, chainedSlices = 0
        for path in files {
            let file = try UniversalFile(parsing: try Corpus.bytes(path))
            for arch in try Corpus.architectures(path) {
                #expect(try await inspectDifference(path: path, table: .chainedFixups, arch: arch) == nil)
                comparisons += 1
                let image = try file.image(try file.slice(for: arch))
                guard try image.parseChainedFixups() != nil else { continue }
                chainedSlices += 1
                #expect(try await inspectDifference(path: path, table: .dyldInfo, arch: arch) == nil)
                comparisons += 1
            }
        }
        return (comparisons, chainedSlices)
    }

    @Test func corpusMatchesObjdump() async throws {
        let (comparisons, chainedSlices) = try await Self.compareWithObjdump(try Corpus.machOFiles())
        print("chained fixups: \(comparisons) comparisons with llvm-objdump over the corpus, \(chainedSlices) chained slices")
        #expect(comparisons > 0)
        #expect(chainedSlices > 0)
    }

    @Test func readerFixturesMatchObjdump() async throws {
        guard FileManager.default.fileExists(atPath: Paths.readerFixtures.path) else {
            Issue.record("\(Paths.readerFixtures.path) is missing: run tools/build-reader-fixtures (make test does)")
            return
        }
        let (comparisons, chainedSlices) = try await Self.compareWithObjdump(try Corpus.machOFiles(under: Paths.readerFixtures))
        print("chained fixups: \(comparisons) comparisons with llvm-objdump over the reader fixtures, \(chainedSlices) chained slices")
        #expect(comparisons > 0)
        #expect(chainedSlices > 0)
    }

    // MARK: - Pointer formats

    @Test func pointer64BindWithInlineAddend() {
        let raw: UInt64 = 1 << 63 | 3 << 51 | 0x2A << 24 | 0x12_3456
        let (pointer, next) = ChainedPointerFormat.pointer64.decode(raw)
        #expect(pointer == .bind(ChainedBind(importOrdinal: 0x12_3456, addend: 0x2A)))
        #expect(next == 3)
    }

    @Test func pointer64RebaseIsAVMAddressAndOffsetFormatAnImageOffset() {
        let raw: UInt64 = 0x0FFF << 51 | 0xAB << 36 | 0x1_0000_4010
        let (vm, vmNext) = ChainedPointerFormat.pointer64.decode(raw)
        #expect(vm == .rebase(ChainedRebase(target: 0x1_0000_4010, kind: .vmAddress, high8: 0xAB)))
        #expect(vmNext == 0xFFF)
        #expect(vm.rebase?.targetAddress(imageBase: 0x1_0000_0000) == 0x1_0000_4010)

        let (offset, _) = ChainedPointerFormat.pointer64Offset.decode(0x4010)
        #expect(offset == .rebase(ChainedRebase(target: 0x4010, kind: .imageOffset, high8: 0)))
        #expect(offset.rebase?.targetAddress(imageBase: 0x1_0000_0000) == 0x1_0000_4010)
    }

    @Test func arm64eRebaseBindAndAuthenticatedForms() {
        // Plain rebase: 43-bit target, high8, 11-bit next.
        let rebase = ChainedPointerFormat.arm64e.decode(0x5 << 51 | 0x80 << 43 | 0x1_0000_8000)
        #expect(rebase.pointer == .rebase(ChainedRebase(target: 0x1_0000_8000, kind: .vmAddress, high8: 0x80)))
        #expect(rebase.next == 5)
        let userland = ChainedPointerFormat.arm64eUserland.decode(0x8000)
        #expect(userland.pointer.rebase?.kind == .imageOffset)

        // Plain bind: 16-bit ordinal, 19-bit signed addend (-8 here).
        let addend19: UInt64 = 0x7_FFF8
        let bind = ChainedPointerFormat.arm64e.decode(1 << 62 | 1 << 51 | addend19 << 32 | 0xBEEF)
        #expect(bind.pointer == .bind(ChainedBind(importOrdinal: 0xBEEF, addend: -8)))
        #expect(bind.next == 1)

        // Authenticated rebase: 32-bit image offset, diversity, address diversity, key DA.
        let authRebase = ChainedPointerFormat.arm64e.decode(
            1 << 63 | 2 << 51 | 2 << 49 | 1 << 48 | 0x1234 << 32 | 0x0000_4000)
        #expect(authRebase.pointer == .authRebase(
            ChainedRebase(target: 0x4000, kind: .imageOffset, high8: 0),
            PointerAuthentication(diversity: 0x1234, addressDiversity: true, key: .da)))
        #expect(authRebase.next == 2)

        // Authenticated bind: ordinal, diversity, no address diversity, key IB.
        let authBind = ChainedPointerFormat.arm64e.decode(1 << 63 | 1 << 62 | 1 << 49 | 0xCAFE << 32 | 7)
        #expect(authBind.pointer == .authBind(
            ChainedBind(importOrdinal: 7, addend: 0),
            PointerAuthentication(diversity: 0xCAFE, addressDiversity: false, key: .ib)))
        #expect(authBind.pointer.authentication?.key.name == "IB")
    }

    @Test func arm64eUserland24HasA24BitOrdinal() {
        let raw: UInt64 = 1 << 62 | 0xAB_CDEF
        #expect(ChainedPointerFormat.arm64eUserland24.decode(raw).pointer.bind?.importOrdinal == 0xAB_CDEF)
        // The same bits in 16-bit-ordinal arm64e keep only the low 16 bits.
        #expect(ChainedPointerFormat.arm64e.decode(raw).pointer.bind?.importOrdinal == 0xCDEF)
        let authRaw: UInt64 = 1 << 63 | 1 << 62 | 3 << 49 | 0x12_3456
        #expect(ChainedPointerFormat.arm64eUserland24.decode(authRaw).pointer == .authBind(
            ChainedBind(importOrdinal: 0x12_3456, addend: 0),
            PointerAuthentication(diversity: 0, addressDiversity: false, key: .db)))
    }

    @Test func pointer32RebaseBindAndNonPointer() {
        let maxValid: UInt32 = 0x0010_0000
        let rebase = ChainedPointerFormat.pointer32.decode(UInt64(3 << 26 | 0x4000 as UInt32), maxValidPointer: maxValid)
        #expect(rebase.pointer == .rebase(ChainedRebase(target: 0x4000, kind: .vmAddress, high8: 0)))
        #expect(rebase.next == 3)

        let bind = ChainedPointerFormat.pointer32.decode(UInt64(1 << 31 | 1 << 26 | 0x2A << 20 | 0xF_FFFF as UInt32))
        #expect(bind.pointer == .bind(ChainedBind(importOrdinal: 0xF_FFFF, addend: 0x2A)))
        #expect(bind.next == 1)

        // Above max_valid_pointer a "rebase" is a value stored with bias (64MB + max) / 2.
        let bias = (0x0400_0000 + maxValid) / 2
        let value = ChainedPointerFormat.pointer32.decode(UInt64(bias + 1234), maxValidPointer: maxValid)
        #expect(value.pointer == .nonPointer(1234))
    }

    @Test func otherFormatsDecodeAndStrides() {
        let cache = ChainedPointerFormat.pointer32Cache.decode(UInt64(2 << 30 | 0x123 as UInt32))
        #expect(cache.pointer == .rebase(ChainedRebase(target: 0x123, kind: .imageOffset, high8: 0)))
        #expect(cache.next == 2)
        let firmware = ChainedPointerFormat.pointer32Firmware.decode(UInt64(0x3F << 26 | 0x456 as UInt32))
        #expect(firmware.pointer == .rebase(ChainedRebase(target: 0x456, kind: .vmAddress, high8: 0)))
        #expect(firmware.next == 0x3F)
        let kernel = ChainedPointerFormat.pointer64KernelCache.decode(1 << 63 | 1 << 51 | 1 << 49 | 0x77 << 32 | 2 << 30 | 0x100)
        #expect(kernel.pointer == .authRebase(
            ChainedRebase(target: 0x100, kind: .imageOffset, high8: 0, cacheLevel: 2),
            PointerAuthentication(diversity: 0x77, addressDiversity: false, key: .ib)))

        let strides = Dictionary(uniqueKeysWithValues: ChainedPointerFormat.allCases.map { ($0, $0.stride) })
        #expect(strides == [
            .arm64e: 8, .pointer64: 4, .pointer32: 4, .pointer32Cache: 4, .pointer32Firmware: 4,
            .pointer64Offset: 4, .arm64eKernel: 4, .pointer64KernelCache: 4, .arm64eUserland: 8,
            .arm64eFirmware: 4, .x86_64KernelCache: 1, .arm64eUserland24: 8,
        ])
        #expect(ChainedPointerFormat.allCases.filter { $0.pointerSize == 4 } == [.pointer32, .pointer32Cache, .pointer32Firmware])
    }

    // MARK: - Imports

    @Test func theThreeImportFormatsWithSpecialOrdinals() throws {
        let symbols = ByteView(Array("\0_first\0_second\0".utf8))

        // DYLD_CHAINED_IMPORT: ordinal 0xFE is flat lookup (-2), weak, name at 1.
        var bytes = Bytes()
        bytes.u32(1 << 9 | 1 << 8 | 0xFE)
        let plain = try ChainedImport(parsing: ByteView(bytes.data), format: .plain, symbols: symbols)
        #expect(plain.libraryOrdinal == -2)
        #expect(plain.weakImport)
        #expect(plain.name == "_first")
        #expect(plain.addend == 0)

        // DYLD_CHAINED_IMPORT_ADDEND: ordinal 2, a negative 32-bit addend.
        bytes = Bytes()
        bytes.u32(8 << 9 | 2)
        bytes.u32(UInt32(bitPattern: -8))
        let addend = try ChainedImport(parsing: ByteView(bytes.data), format: .addend, symbols: symbols)
        #expect(addend.libraryOrdinal == 2)
        #expect(!addend.weakImport)
        #expect(addend.name == "_second")
        #expect(addend.addend == -8)

        // DYLD_CHAINED_IMPORT_ADDEND64: 16-bit ordinal 0xFFFD is weak lookup (-3), weak bit
        // 16, a 32-bit name offset at bit 32, a 64-bit addend.
        bytes = Bytes()
        bytes.u64(8 << 32 | 1 << 16 | 0xFFFD)
        bytes.u64(0x1_0000_0000)
        let wide = try ChainedImport(parsing: ByteView(bytes.data), format: .addend64, symbols: symbols)
        #expect(wide.libraryOrdinal == -3)
        #expect(wide.weakImport)
        #expect(wide.nameOffset == 8)
        #expect(wide.name == "_second")
        #expect(wide.addend == 0x1_0000_0000)
        #expect(ChainedImportFormat.allCases.map(\.entrySize) == [4, 8, 16])

        // A name offset past the pool is an error at the entry.
        bytes = Bytes()
        bytes.u32(100 << 9 | 1)
        let past = failure { () throws(MachOError) in
            _ = try ChainedImport(parsing: ByteView(bytes.data), format: .plain, symbols: symbols)
        }
        #expect(past?.offset == 0)
    }

    // MARK: - Chain starts and walks on hand-built images

    @Test func multiStartsListEveryStartOfThePage() throws {
        // One 0x1000-byte page of DYLD_CHAINED_PTR_32 with three chains: page_start[0]
        // points at chain_starts[1...], the last flagged with DYLD_CHAINED_PTR_START_LAST.
        var data = [UInt8](repeating: 0, count: 0x1000)
        let maxValid: UInt32 = 0x0010_0000
        put32(&data, 0x010, 2 << 26 | 0x0800)                 // rebase, next +8
        put32(&data, 0x018, (0x0400_0000 + maxValid) / 2 + 7) // non-pointer 7, end
        put32(&data, 0x100, 1 << 31 | 0x3 << 20 | 1)          // bind import 1, addend 3
        put32(&data, 0x400, 0x0900)                           // rebase, end
        let image = try SyntheticImage(
            format: .pointer32, pageStarts: [0x8001, 0x0010, 0x0100, 0x8400], pageCount: 1,
            maxValidPointer: maxValid, data: data).image()
        let fixups = try #require(try image.parseChainedFixups())
        let starts = try #require(fixups.segments.first)
        #expect(starts.pageStarts == [0x8001])

        // The multi-start list of page 0: entries 1 to 3, the last one flagged.
        let chainStarts = try (1...3).map { (entry) throws(MachOError) in try starts.chainStartEntry(entry) }
        #expect(chainStarts == [0x10, 0x100, 0x400 | ChainedStartsInSegment.startLast])

        let found = try fixups.fixups(in: image)
        #expect(found.map(\.offsetInSegment) == [0x10, 0x18, 0x100, 0x400])
        #expect(found.map(\.pointer) == [
            .rebase(ChainedRebase(target: 0x800, kind: .vmAddress, high8: 0)), .nonPointer(7),
            .bind(ChainedBind(importOrdinal: 1, addend: 3)),
            .rebase(ChainedRebase(target: 0x900, kind: .vmAddress, high8: 0)),
        ])
        #expect(found[2].boundImport?.name == "_second")
        #expect(found[0].rawValue == UInt64(2 << 26 | 0x0800 as UInt32))
    }

    @Test func fixupRecordsCarryPlaceRawValueAndTarget() throws {
        var data = [UInt8](repeating: 0, count: 0x2000)
        put64(&data, 0x0008, 1 << 63 | 2 << 51 | 0x10 << 24 | 0)    // bind import 0 +0x10, next +8
        put64(&data, 0x0010, 0x1000)                                  // rebase, end
        put64(&data, 0x1000, 1 << 63 | 1)                             // page 1: bind import 1
        let image = try SyntheticImage(format: .pointer64Offset, pageStarts: [8, 0], pageCount: 2, data: data).image()
        var visited: [ChainedFixup] = []
        try image.forEachChainedFixup { (fixup) throws(MachOError) in visited.append(fixup) }
        #expect(visited == (try image.parseChainedFixups()?.fixups(in: image) ?? []))
        #expect(visited.map(\.segmentIndex) == [1, 1, 1])
        #expect(visited.map(\.offsetInSegment) == [0x8, 0x10, 0x1000])
        #expect(visited.map(\.address) == [0x1008, 0x1010, 0x2000])
        #expect(visited.map(\.fileOffset) == [0x1008, 0x1010, 0x2000])
        #expect(visited.map(\.format) == [.pointer64Offset, .pointer64Offset, .pointer64Offset])
        #expect(visited[0].rawValue == (1 << 63 | 2 << 51 | 0x10 << 24) as UInt64)
        #expect(visited[0].boundImport?.name == "_first")
        #expect(visited[0].pointer == .bind(ChainedBind(importOrdinal: 0, addend: 0x10)))
        #expect(visited[1].pointer.rebase?.targetAddress(imageBase: image.preferredLoadAddress) == 0x1000)
        #expect(visited[2].boundImport?.name == "_second")
    }

    @Test func aChainThatLeavesItsPageIsAnErrorAtThePointer() throws {
        var data = [UInt8](repeating: 0, count: 0x2000)
        put64(&data, 0xFF8, 2 << 51 | 0x10)  // next would be 0xFF8 + 8 = 0x1000: the next page
        let image = try SyntheticImage(format: .pointer64, pageStarts: [0xFF8, 0xFFFF], pageCount: 2, data: data).image()
        let error = failure { () throws(MachOError) in _ = try image.parseChainedFixups()?.fixups(in: image) ?? [] }
        #expect(error?.offset == SyntheticImage.dataFileOffset + 0xFF8)
        #expect(error.map { "\($0)" }?.contains("outside its 4096-byte page") == true)
    }

    @Test func aChainRunningPastTheSegmentDataIsAnError() throws {
        var data = [UInt8](repeating: 0, count: 0x1000)
        put64(&data, 0x10, 0)
        // Page 1 is outside the segment's 0x1000 file bytes.
        let image = try SyntheticImage(format: .pointer64, pageStarts: [0x10, 0x20], pageCount: 2, data: data).image()
        let error = failure { () throws(MachOError) in _ = try image.parseChainedFixups()?.fixups(in: image) ?? [] }
        #expect(error?.offset == SyntheticImage.dataFileOffset + 0x1000)
    }

    @Test func chainsCannotLoopOrRunForever() throws {
        // Every word says "next = 1": the walk steps 4 bytes at a time to the page's end
        // and stops there with an error instead of going round.
        var data = [UInt8](repeating: 0, count: 0x2000)
        for offset in stride(from: 0, to: data.count, by: 4) { put32(&data, offset, 1 << 19) }
        let image = try SyntheticImage(format: .pointer64, pageStarts: [0, 0xFFFF], pageCount: 2, data: data).image()
        var steps = 0
        let error = failure { () throws(MachOError) in
            try image.forEachChainedFixup { (_) throws(MachOError) in steps += 1 }
        }
        #expect(steps == 0x1000 / 4)
        #expect(error?.offset == SyntheticImage.dataFileOffset + 0xFFC)

        // A multi-start list whose last entry is never flagged ends with the structure.
        let unterminated = try SyntheticImage(
            format: .pointer32, pageStarts: [0x8001, 0x10, 0x20], pageCount: 1,
            data: [UInt8](repeating: 0, count: 0x1000)).image()
        let listError = failure { () throws(MachOError) in _ = try unterminated.parseChainedFixups()?.fixups(in: unterminated) }
        #expect(listError != nil)
        if case .truncated? = listError?.reason {} else { Issue.record("expected truncation, got \(String(describing: listError))") }
    }

    @Test func importOrdinalOutOfRangeIsAnErrorAtThePointer() throws {
        var data = [UInt8](repeating: 0, count: 0x1000)
        put64(&data, 0x20, 1 << 63 | 2)  // only imports 0 and 1 exist
        let image = try SyntheticImage(format: .pointer64, pageStarts: [0x20], pageCount: 1, data: data).image()
        let error = failure { () throws(MachOError) in _ = try image.parseChainedFixups()?.fixups(in: image) ?? [] }
        #expect(error?.offset == SyntheticImage.dataFileOffset + 0x20)
    }

    @Test func importsCountTooLargeForTheBlobIsAnError() throws {
        let synthetic = SyntheticImage(
            format: .pointer64, pageStarts: [0], pageCount: 1, data: [UInt8](repeating: 0, count: 0x1000),
            importsCount: 0x4000_0000)
        let image = try synthetic.image()
        let error = failure { () throws(MachOError) in _ = try image.parseChainedFixups() }
        #expect(error?.offset == SyntheticImage.blobFileOffset + 16)
    }

    @Test func zlibCompressedSymbolsAreRefused() throws {
        let image = try SyntheticImage(
            format: .pointer64, pageStarts: [0], pageCount: 1, data: [UInt8](repeating: 0, count: 0x1000),
            symbolsFormat: 1).image()
        let error = failure { () throws(MachOError) in _ = try image.parseChainedFixups() }
        #expect(error?.offset == SyntheticImage.blobFileOffset + 24)
        if case .unsupported? = error?.reason {} else { Issue.record("expected .unsupported, got \(String(describing: error))") }
    }

    @Test func unknownPointerFormatIsRefusedAtItsField() throws {
        var synthetic = SyntheticImage(format: .pointer64, pageStarts: [0], pageCount: 1, data: [UInt8](repeating: 0, count: 0x1000))
        synthetic.rawFormat = 13
        let image = try synthetic.image()
        let error = failure { () throws(MachOError) in _ = try image.parseChainedFixups() }
        #expect(error?.offset == SyntheticImage.blobFileOffset + SyntheticImage.segmentInfoOffset + 6)
    }
}

// MARK: - Helpers

/// Runs `body` and returns the error it throws, if any.
private func failure(_ body: () throws(MachOError) -> Void) -> MachOError? {
    do {
        try body()
        return nil
    } catch {
        return error
    }
}

private func put32(_ bytes: inout [UInt8], _ offset: Int, _ value: UInt32) {
    for index in 0..<4 { bytes[offset + index] = UInt8(truncatingIfNeeded: value >> (8 * index)) }
}

private func put64(_ bytes: inout [UInt8], _ offset: Int, _ value: UInt64) {
    for index in 0..<8 { bytes[offset + index] = UInt8(truncatingIfNeeded: value >> (8 * index)) }
}

/// A little-endian byte writer.
private struct Bytes {
    var data: [UInt8] = []
    mutating func u16(_ value: UInt16) { for index in 0..<2 { data.append(UInt8(truncatingIfNeeded: value >> (8 * index))) } }
    mutating func u32(_ value: UInt32) { for index in 0..<4 { data.append(UInt8(truncatingIfNeeded: value >> (8 * index))) } }
    mutating func u64(_ value: UInt64) { for index in 0..<8 { data.append(UInt8(truncatingIfNeeded: value >> (8 * index))) } }
    mutating func name(_ text: String) { data += Array(text.utf8) + [0] }
    mutating func pad(to size: Int) { while data.count < size { data.append(0) } }
}

/// A minimal x86_64 dylib: `__TEXT` (file 0..<0x1000, vm 0), `__DATA` holding `data` (file
/// and vm 0x1000) with one chained-starts entry, and an LC_DYLD_CHAINED_FIXUPS blob with two
/// DYLD_CHAINED_IMPORTs (`_first` from ordinal 1, `_second` flat) placed after `__DATA`.
private struct SyntheticImage {
    static let dataFileOffset = 0x1000
    /// Offset of the `dyld_chained_starts_in_segment` in the blob.
    static let segmentInfoOffset = 48

    let format: ChainedPointerFormat
    /// `page_start[]` followed by any `chain_starts[]` overflow entries.
    let pageStarts: [UInt16]
    let pageCount: UInt16
    var maxValidPointer: UInt32 = 0
    let data: [UInt8]
    var importsCount: UInt32 = 2
    var symbolsFormat: UInt32 = 0
    var rawFormat: UInt16?

    static var blobFileOffset: Int { 0x1000 + 0x2000 }

    init(format: ChainedPointerFormat, pageStarts: [UInt16], pageCount: UInt16, maxValidPointer: UInt32 = 0,
         data: [UInt8], importsCount: UInt32 = 2, symbolsFormat: UInt32 = 0) {
        self.format = format
        self.pageStarts = pageStarts
        self.pageCount = pageCount
        self.maxValidPointer = maxValidPointer
        self.data = data
        self.importsCount = importsCount
        self.symbolsFormat = symbolsFormat
    }

    func blob() -> [UInt8] {
        var blob = Bytes()
        let startsOffset: UInt32 = 32
        let infoSize = UInt32(ChainedStartsInSegment.fixedSize + 2 * pageStarts.count)
        let importsOffset = UInt32(SyntheticImage.segmentInfoOffset) + (infoSize + 7) / 8 * 8
        let symbolsOffset = importsOffset + 8
        // dyld_chained_fixups_header
        for value in [0, startsOffset, importsOffset, symbolsOffset, importsCount, 1, symbolsFormat] { blob.u32(value) }
        blob.pad(to: Int(startsOffset))
        // dyld_chained_starts_in_image: __TEXT none, __DATA at 16.
        blob.u32(2)
        blob.u32(0)
        blob.u32(UInt32(SyntheticImage.segmentInfoOffset) - startsOffset)
        blob.pad(to: SyntheticImage.segmentInfoOffset)
        // dyld_chained_starts_in_segment
        blob.u32(infoSize)
        blob.u16(0x1000)
        blob.u16(rawFormat ?? format.rawValue)
        blob.u64(UInt64(SyntheticImage.dataFileOffset))
        blob.u32(maxValidPointer)
        blob.u16(pageCount)
        for start in pageStarts { blob.u16(start) }
        blob.pad(to: Int(importsOffset))
        blob.u32(1 << 9 | 1)     // _first from libbase
        blob.u32(8 << 9 | 0xFE)  // _second, flat lookup
        blob.name("")
        blob.name("_first")
        blob.name("_second")
        blob.pad(to: (blob.data.count + 7) / 8 * 8)
        return blob.data
    }

    func bytes() -> [UInt8] {
        let blob = blob()
        let dataSize = data.count
        let blobOffset = SyntheticImage.blobFileOffset
        precondition(dataSize <= blobOffset - SyntheticImage.dataFileOffset)
        let dylib = "/usr/lib/libbase.dylib"
        let dylibCommandSize = (24 + dylib.utf8.count + 1 + 7) / 8 * 8
        var out = Bytes()
        let commandsSize = 72 * 3 + 16 + dylibCommandSize
        // mach_header_64: x86_64 MH_BUNDLE (an MH_DYLIB would need LC_ID_DYLIB), 5 commands.
        for value: UInt32 in [0xFEED_FACF, 0x0100_0007, 3, 8, 5, UInt32(commandsSize), 0, 0] { out.u32(value) }
        func segment(_ name: String, vm: UInt64, vmSize: UInt64, file: UInt64, fileSize: UInt64) {
            out.u32(0x19)
            out.u32(72)
            out.data += Array(name.utf8) + [UInt8](repeating: 0, count: 16 - name.utf8.count)
            for value in [vm, vmSize, file, fileSize] { out.u64(value) }
            for value: UInt32 in [3, 3, 0, 0] { out.u32(value) }
        }
        segment("__TEXT", vm: 0, vmSize: 0x1000, file: 0, fileSize: 0x1000)
        segment("__DATA", vm: 0x1000, vmSize: UInt64(0x2000), file: UInt64(SyntheticImage.dataFileOffset), fileSize: UInt64(dataSize))
        segment("__LINKEDIT", vm: 0x3000, vmSize: 0x1000, file: UInt64(blobOffset), fileSize: UInt64(blob.count))
        // LC_LOAD_DYLIB
        out.u32(0xC)
        out.u32(UInt32(dylibCommandSize))
        for value: UInt32 in [24, 0, 0x1_0000, 0x1_0000] { out.u32(value) }
        out.name(dylib)
        out.pad(to: 32 + 72 * 3 + dylibCommandSize)
        // LC_DYLD_CHAINED_FIXUPS
        for value: UInt32 in [0x8000_0034, 16, UInt32(blobOffset), UInt32(blob.count)] { out.u32(value) }
        out.pad(to: SyntheticImage.dataFileOffset)
        out.data += data
        out.pad(to: blobOffset)
        out.data += blob
        return out.data
    }

    func image() throws -> MachOImage {
        try MachOImage(parsing: bytes())
    }
}
