import Foundation
import MachOReader
import ProcessRunner
import Testing
import TestSupport

/// Signature work is bounded by the bytes a file holds. A CodeDirectory's pages are at most
/// 16 KiB (xnu's rule), its code limit stops at the signature itself, and a page in a hole of
/// a sparse file is compared with the hash of zeros without being read: a sparse copy of a
/// signed image verifies with ld64.lld's cdHash and never brings its holes into memory.
@Suite(.bounded) struct SignatureHoleTests {
    static let libbase = Paths.readerFixtures.appendingPathComponent("signed/x86_64-chained/libbase.dylib").path

    static func codeDirectory() throws -> [UInt8] {
        let signature = try #require(try CodeSignature.read(from: try MachOImage(parsing: try Corpus.bytes(libbase))))
        let blob = try #require(signature.superBlob.blob(CSSLOT_CODEDIRECTORY)).view
        return try blob.bytes(0, blob.count)
    }

    @Test func pagesOutsideFourToSixteenKiBAreRefusedAtThePageSize() throws {
        let original = try Self.codeDirectory()
        #expect(original[39] == 12)
        for shift: UInt8 in [0, 9, 11, 15, 20, 24] {
            var changed = original
            changed[39] = shift
            #expect(throws: MachOError.self, "2^\(shift)") { try CS_CodeDirectory(parsing: ByteView(changed), slot: 0) }
            do {
                _ = try CS_CodeDirectory(parsing: ByteView(changed), slot: 0)
            } catch {
                #expect(error.offset == 39 && "\(error)".contains("page size"), "2^\(shift): \(error)")
            }
        }
    }

    @Test func aCodeLimitPastTheSignatureIsRefused() throws {
        let bytes = ByteView(try Self.codeDirectory())
        let limit = Int(try CS_CodeDirectory(parsing: bytes, slot: 0).codeLimit)
        #expect(throws: Never.self) { try CS_CodeDirectory(parsing: bytes, slot: 0, signatureOffset: limit) }
        do {
            _ = try CS_CodeDirectory(parsing: bytes, slot: 0, signatureOffset: limit - 16)
            Issue.record("a code limit past the signature was accepted")
        } catch {
            #expect(error.offset == 32 && "\(error)".contains("signature's own offset"), "\(error)")
        }
    }

    /// A dylib with 32 MiB of zeros in its data, signed by ld64.lld, copied sparse: both
    /// copies verify with the same cdHash, and checking the sparse one keeps at least 24 MiB
    /// less resident than checking the dense one (its holes are never read).
    @Test func aSparseCopyVerifiesWithoutReadingItsHoles() async throws {
        let directory = URL(fileURLWithPath: try Scratch.directory("sparse"))
        defer { Scratch.remove(directory.path) }
        let source = directory.appendingPathComponent("zeros.c").path
        try "__attribute__((used)) char zeros[32 << 20] = {1}; int answer(void) { return zeros[0]; }\n"
            .write(toFile: source, atomically: true, encoding: .utf8)
        let object = directory.appendingPathComponent("zeros.o").path, dense = directory.appendingPathComponent("dense.dylib").path
        let sparse = directory.appendingPathComponent("sparse.dylib").path
        let compile = try await ProcessRunner.run("/opt/swift/usr/bin/clang", ["-target", "x86_64-apple-macos11", "-c", source, "-o", object],
                                                  error: .mergedIntoOutput)
        try #require(compile.status == 0, "\(compile.output)")
        let link = try await ProcessRunner.run("/usr/lib/llvm-19/bin/ld64.lld", [
            "-arch", "x86_64", "-platform_version", "macos", "11.0", "11.0", "-dylib", "-adhoc_codesign", "-undefined", "dynamic_lookup",
            "-o", dense, object,
        ], error: .mergedIntoOutput)
        try #require(link.status == 0, "\(link.output)")
        let copy = try await ProcessRunner.run("/bin/cp", ["--sparse=always", dense, sparse], error: .mergedIntoOutput)
        try #require(copy.status == 0, "\(copy.output)")
        var info = stat()
        try #require(stat(sparse, &info) == 0)
        let stored = Int(info.st_blocks) * 512
        try #require(stored < 8 << 20, "the file system keeps no holes (\(stored) bytes stored): nothing to check")

        func verify(_ path: String) async throws -> (cdHash: String, valid: Bool, residentKiB: Int) {
            let result = try await Dyld3Binary.run(["codesign", "verify", "--json", path], limitSeconds: 60)
            try #require(result.status == 0, "\(result.stderr)")
            let slices = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]])
            let peak = try await PeakMemory.run(try Dyld3Binary.path(), ["codesign", "verify", path])
            try #require(peak.status == 0, "\(peak.stderr)")
            return (try #require(slices.first?["cdhash"] as? String), slices.first?["valid"] as? Bool == true, peak.peakResidentBytes / 1024)
        }
        let whole = try await verify(dense), holey = try await verify(sparse)
        #expect(whole.valid && holey.valid)
        #expect(holey.cdHash == whole.cdHash)
        #expect(holey.residentKiB + 24 * 1024 < whole.residentKiB, "sparse \(holey.residentKiB) KiB, dense \(whole.residentKiB) KiB")
    }
}
