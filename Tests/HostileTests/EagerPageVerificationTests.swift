@testable import ClosureFormat
import Dyld2
import Dyld3
import Foundation
import ClosureCache
import LaunchPlan
import LoaderCore
import TestSupport
import Testing

/// `--verify-pages` (docs/code-signing.md, "Eager page verification"): an eager dyld3 launch
/// hashes every mapped page of each signed image against its code slot before the fixups.
@Suite(.serialized, .bounded) struct EagerPageVerificationTests {
    /// An intact app: every code slot ld64.lld wrote (`codesign verify`'s page count per
    /// image) is checked, eager; page-in checks fewer (the pages its pager fills are checked
    /// as they are filled) and launches alike.
    @Test func everyPageOfAnIntactAppIsChecked() async throws {
        let app = try FixtureApp.named("basic")
        let cache = try Scratch.directory("verify-pages")
        defer { Scratch.remove(cache) }
        let path = try app.install(into: cache)
        let images = try ClosureFile.read(path).images.map(\.path)
        let verify = try await Dyld3Binary.run(["codesign", "verify", "--json"] + images, limitSeconds: 60)
        let slices = try #require((try? JSONSerialization.jsonObject(with: Data(verify.stdout.utf8))) as? [[String: Any]])
        let slots = slices.compactMap { $0["pages"] as? Int }.reduce(0, +)
        #expect(verify.status == 0 && slices.count == images.count && slots > images.count)
        var request = LaunchOptions(roots: [app.executable], arch: app.arch, root: app.root, run: false)
        request.verifyPages = true
        let eager = try FastPath.launch(closurePath: path, request: request)
        eager.memory.release()
        #expect(eager.report.pagesVerified == slots)
        request.fixups = .pageIn
        let pageIn = try FastPath.launch(closurePath: path, request: request)
        pageIn.memory.release()
        #expect((pageIn.report.pagesVerified ?? 0) > 0 && (pageIn.report.pagesVerified ?? 0) <= slots)
    }

    /// A framework page changed where the identity check cannot see it (the closure carries
    /// the changed file's identity, the CodeDirectory and so its cdHash unchanged, as after a
    /// write the stat check misses): the eager launch runs it unless `--verify-pages`, which
    /// refuses it with dyld2's line, naming the image, the page and its file offset.
    @Test func aChangedPageTheIdentityCheckMissesIsRefused() throws {
        let app = try FixtureApp.named("basic").scratchCopy()
        defer { try? FileManager.default.removeItem(at: app.directory) }
        var closure = try app.closure()
        let util = app.bundle + "/Frameworks/Util.framework/Util"
        let index = try #require(closure.images.firstIndex { $0.path == util })
        var bytes = try Data(contentsOf: URL(fileURLWithPath: util))
        bytes[0x0ff0] ^= 0xff
        try bytes.write(to: URL(fileURLWithPath: util))
        let recorded = closure.images[index].identity
        closure.images[index].identity = try ImageIdentity.current(path: util, uuid: recorded.uuid, contentOnly: false,
                                                                   signature: recorded.signature)
        let cache = try Scratch.directory("verify-pages-changed")
        defer { Scratch.remove(cache) }
        let path = ClosureCache(directory: cache).closurePath(forApp: app.executable, arch: app.arch)
        try ClosureFile.write(closure, to: path)

        var request = LaunchOptions(roots: [app.executable], arch: app.arch, root: app.root, run: false)
        let unchecked = try FastPath.launch(closurePath: path, request: request)
        unchecked.memory.release()
        let expected = LoadError.codeSignature(path: util, .page(directory: "CodeDirectory", page: 0, fileOffset: 0, size: 4096))
        #expect(expected.description == "\(util): code signature invalid: CodeDirectory: page 0 (file offset 0x0, 4096 bytes) does not match its hash")
        #expect(throws: expected) { _ = try SlowPath.launch(request) }
        request.verifyPages = true
        #expect(throws: expected) { _ = try FastPath.launch(closurePath: path, request: request) }
    }
}
