@testable import ClosureFormat
import ClosureBuild
import Crypto
import Dyld2
import Dyld3
import Foundation
import ClosureCache
import LaunchPlan
import LoaderCore
import MachOReader
import TestSupport
import Testing

/// Code signatures at launch (docs/code-signing.md, "At launch"): a signed image whose
/// signature does not hold never runs, in either path, and a closure identifies each signed
/// image by the cdHash of its CodeDirectory. The fixture images are signed by ld64.lld
/// (`-adhoc_codesign`), the independent implementation the checks are held against.
@Suite(.serialized, .bounded) struct CodeSignatureLaunchTests {
    /// Each image's closure record names its best CodeDirectory: at the recorded offset the
    /// file holds a CodeDirectory (magic 0xfade0c02, big-endian, and its own length), and
    /// SHA-256 of those bytes, taken here with swift-crypto over the raw file, begins with the
    /// recorded cdHash. Every image of every fixture app of both arches is signed.
    @Test func theClosureRecordsEachImagesCdHash() throws {
        var images = 0
        for app in try FixtureApp.all().filter(\.launches) {
            let closure = try app.closure()
            for image in closure.images {
                let signature = try #require(image.identity.signature, "\(image.path) is not signed")
                let file = try Data(contentsOf: URL(fileURLWithPath: image.path))
                let start = Int(signature.codeDirectoryOffset), end = start + signature.codeDirectorySize
                try #require(end <= file.count)
                let blob = [UInt8](file[start..<end])
                #expect(blob.prefix(4).elementsEqual([0xfa, 0xde, 0x0c, 0x02]), "\(image.path)")
                let length = blob[4..<8].reduce(0) { $0 << 8 | Int($1) }
                #expect(length == blob.count, "\(image.path)")
                #expect(signature.hashType == .sha256)
                #expect(Array(SHA256.hash(data: blob)).prefix(20).elementsEqual(signature.cdHash.bytes), "\(image.path)")
                images += 1
            }
        }
        #expect(images > 50)
    }

    /// One byte of a signed framework's code changed: `codesign verify` (whose oracle is
    /// ld64.lld's signature) names page 0; dyld2 refuses before mapping, naming the same page
    /// and its file offset; install refuses; a closure installed before the change is stale
    /// for dyld3, and `auto` falls back to dyld2, which refuses: nothing runs.
    @Test func aChangedCodePageIsRefusedByEveryPath() async throws {
        let app = try FixtureApp.named("basic").scratchCopy()
        defer { try? FileManager.default.removeItem(at: app.directory) }
        let cache = try Scratch.directory("codesign-launch")
        defer { Scratch.remove(cache) }
        let install = try await Dyld3Binary.run(["install", "--cache", cache, "--root", app.root, app.bundle], limitSeconds: 60)
        try #require(install.status == 0, "\(install.stderr)")
        let framework = app.bundle + "/Frameworks/Util.framework/Util"
        var bytes = try Data(contentsOf: URL(fileURLWithPath: framework))
        bytes[0x0ff0] ^= 0xff
        try bytes.write(to: URL(fileURLWithPath: framework))

        let verify = try await Dyld3Binary.run(["codesign", "verify", "--json", framework], limitSeconds: 60)
        let slices = (try? JSONSerialization.jsonObject(with: Data(verify.stdout.utf8))) as? [[String: Any]]
        #expect(slices?.count == 1 && slices?.first?["bad_pages"] as? [Int] == [0] && slices?.first?["valid"] as? Bool == false, "\(verify.stdout)")
        #expect(verify.status == 3)
        let expected = "\(framework): code signature invalid: CodeDirectory: page 0 (file offset 0x0, 4096 bytes) does not match its hash"
        let dyld2 = try await Dyld3Binary.run(["launch", "--mode", "dyld2", "--root", app.root, app.bundle], limitSeconds: 60)
        #expect(dyld2.status != 0 && dyld2.stderr.contains(expected), "\(dyld2.stderr)")
        #expect(!dyld2.stdout.contains("main returned"))
        let dyld3 = try await Dyld3Binary.run(["launch", "--mode", "dyld3", "--cache", cache, "--root", app.root, app.bundle], limitSeconds: 60)
        #expect(dyld3.status != 0 && dyld3.stderr.contains("stale") && dyld3.stderr.contains(framework), "\(dyld3.stderr)")
        let auto = try await Dyld3Binary.run(["launch", "--mode", "auto", "--cache", cache, "--root", app.root, app.bundle], limitSeconds: 60)
        #expect(auto.status != 0 && auto.stderr.contains(expected) && !auto.stdout.contains("main returned"), "\(auto.stderr)")
        let reinstall = try await Dyld3Binary.run(["install", "--cache", cache, "--root", app.root, app.bundle], limitSeconds: 60)
        #expect(reinstall.status != 0 && reinstall.stderr.contains(expected), "\(reinstall.stderr)")
    }

    /// A closure whose recorded cdHash is not the image's (re-encoded with one bit of it
    /// flipped; the image itself intact): the fast path hashes the CodeDirectory again and
    /// refuses the closure as stale, naming the image and both cdHashes, before anything is
    /// mapped; `auto` falls back to dyld2, which verifies the image and runs it.
    @Test func aRecordedCdHashThatIsNotTheImagesIsStale() async throws {
        let app = try FixtureApp.named("basic")
        var closure = try app.closure()
        let index = closure.images.count - 1
        let recorded = try #require(closure.images[index].identity.signature)
        var flipped = recorded.cdHash.bytes
        flipped[19] ^= 1
        closure.images[index].identity.signature = SignedImage(
            cdHash: try #require(CDHash(bytes: flipped)), hashType: recorded.hashType,
            codeDirectoryOffset: recorded.codeDirectoryOffset, codeDirectorySize: recorded.codeDirectorySize)
        let cache = try Scratch.directory("codesign-cdhash")
        defer { Scratch.remove(cache) }
        let path = ClosureCache(directory: cache).closurePath(forApp: app.executable, arch: app.arch)
        try ClosureFile.write(closure, to: path)
        let request = LaunchOptions(roots: [app.executable], arch: app.arch, root: app.root, run: false)
        #expect { try FastPath.launch(closurePath: path, request: request) } throws: { error in
            guard let error = error as? ClosureError, case let .stale(closurePath, image, what) = error else { return false }
            return closurePath == path && image == closure.images[index].path && what.contains(recorded.cdHash.hex)
                && what.contains("has another code signature")
        }
        let auto = try await Dyld3Binary.run(["launch", app.bundle, "--root", app.root, "--cache", cache, "--mode", "auto", "--json"],
                                             limitSeconds: 60)
        try ClosureRefusal.expectFallback(auto, of: app) { $0.hasPrefix("stale:") }
    }
}
