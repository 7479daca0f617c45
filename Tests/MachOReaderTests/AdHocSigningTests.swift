import Foundation
import MachOReader
import Testing
import TestSupport

/// `dyld3 codesign sign --adhoc` against ld64.lld, which wrote every signed reader fixture:
/// signing an lld-signed image again gives exactly lld's bytes, whatever was damaged in its
/// signature; a page changed and signed again verifies, and differs from lld's output only
/// in that byte and that page's code slot; changed back and signed again, it is lld's file.
@Suite(.bounded) struct AdHocSigningTests {
    static let variants = ["x86_64-chained", "arm64-opcodes"]

    @Test(arguments: variants.flatMap { variant in ["app", "libbase.dylib"].map { (variant, $0) } })
    func signingAgainGivesLLDsBytes(_ variant: String, _ name: String) async throws {
        let signed = CodeSignatureTests.signedRoot.appendingPathComponent("\(variant)/\(name)").path
        let stem = "\(variant)-\(name.split(separator: ".")[0])"
        let damaged = CodeSignatureTests.signedRoot.appendingPathComponent("damaged/\(stem)").path
        let original = try Corpus.bytes(signed)
        let scratch = try Scratch.directory("adhoc-sign")
        defer { Scratch.remove(scratch) }

        // A code slot's hash damaged: signed again to another file, lld's bytes.
        let resigned = scratch + "/resigned"
        let fromSlot = try await Dyld3Binary.run(["codesign", "sign", "--adhoc", damaged + ".code-directory", "--out", resigned])
        #expect(fromSlot.status == 0, "\(fromSlot.stderr)")
        #expect(try Corpus.bytes(resigned) == original)

        // One byte of __TEXT changed (the manifest's offset), signed again in place: valid, and
        // apart from that byte only its page's 32-byte slot differs from lld's file.
        let patched = scratch + "/patched"
        try FileManager.default.copyItem(atPath: damaged + ".text-page", toPath: patched)
        #expect(try await Dyld3Binary.run(["codesign", "verify", patched]).status == 3)
        let sign = try await Dyld3Binary.run(["codesign", "sign", "--adhoc", patched])
        #expect(sign.status == 0, "\(sign.stderr)")
        #expect(try await Dyld3Binary.run(["codesign", "verify", patched]).status == 0)
        var bytes = try Corpus.bytes(patched)
        #expect(bytes.count == original.count)
        let differing = zip(bytes, original).enumerated().filter { $0.element.0 != $0.element.1 }.map(\.offset)
        let changed = try #require(differing.first)
        #expect(differing.count >= 2 && differing.count <= 33 && differing.dropFirst().allSatisfy { $0 - differing[1] < 32 && $0 > changed })
        #expect(FileManager.default.isExecutableFile(atPath: patched) == FileManager.default.isExecutableFile(atPath: damaged + ".text-page"))

        bytes[changed] = original[changed]
        try Data(bytes).write(to: URL(fileURLWithPath: patched))
        #expect(try await Dyld3Binary.run(["codesign", "sign", "--adhoc", patched]).status == 0)
        #expect(try Corpus.bytes(patched) == original)
    }

    /// What cannot be signed in place is one line naming the file and why: an unsigned image
    /// (no range to write into) and a universal file.
    @Test func anUnsignedImageOrAUniversalFileIsRefused() async throws {
        let unsigned = Paths.readerFixtures.appendingPathComponent("x86_64-chained/app").path
        let universal = CodeSignatureTests.signedRoot.appendingPathComponent("fat/app").path
        for (file, why) in [(unsigned, "LC_CODE_SIGNATURE"), (universal, "universal file")] {
            let before = try Corpus.bytes(file)
            let result = try await Dyld3Binary.run(["codesign", "sign", "--adhoc", file])
            #expect(result.status == 1 && result.stderr.hasPrefix("dyld3: \(file): ") && result.stderr.contains(why), "\(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1)
            #expect(try Corpus.bytes(file) == before)
        }
    }
}
