@testable import Dyld3
import Foundation
@testable import ClosureCache
import LoaderCore
import TestSupport
import Testing
import LaunchPlan
@testable import ClosureFormat

/// Forgeries with a valid checksum whose fields disagree with each other: a binding edited
/// apart from the image list it binds, a root count the host field contradicts, an image
/// listed twice in the initializer order, and plans whose mapping fails. Each is refused as
/// a closure error naming the closure file (decode, `verify`, launch), and `auto` falls back.
@Suite(.serialized, .bounded) struct FieldAgreementTests {
    /// Writes `closure` where a launch of `app` looks for its closure, in a new cache.
    static func plant(_ closure: LaunchClosure, for app: FixtureApp, _ purpose: String) throws -> (cache: String, path: String) {
        let cache = try Scratch.directory(purpose)
        let path = ClosureCache(directory: cache).closurePath(forApp: app.executable, arch: app.arch)
        try ClosureFile.write(closure, to: path)
        return (cache, path)
    }

    /// Another app's genuine closure with only its recorded app edited to this app's
    /// (checksum recomputed, unsigned): the binding now matches the request, the image list
    /// still runs the other app.
    @Test func anotherAppsClosureWithOnlyItsAppEditedIsCorrupt() async throws {
        let victim = try FixtureApp.named("basic"), other = try FixtureApp.named("init-order")
        var closure = try other.closure()
        closure.binding.app = ClosureBinding.resolved(victim.executable)
        let (cache, path) = try Self.plant(closure, for: victim, "agreement-app")
        defer { Scratch.remove(cache) }
        let corrupt = try #require(ClosureRefusal.corruption(path))
        #expect(corrupt.path == path && corrupt.what.contains("main image") && corrupt.what.contains("init-order") && corrupt.what.contains("disagree"))
        #expect(ClosureRefusal.launchError(victim, closurePath: path)?.kind == "corrupt")
        let verdict = ClosureVerification(checking: path)
        #expect(verdict.status == .corrupt && verdict.problems.first?.message.contains("disagree") == true, "\(verdict.status): \(verdict.problems)")
        let result = try await Dyld3Binary.launchAuto(victim, cache: cache)
        try ClosureRefusal.expectFallback(result, of: victim) { $0.hasPrefix("corrupt:") }
    }

    /// One image record's path edited in the encoded body (same length, checksum computed
    /// again): the paths are no longer the list the binding covers, and reading the file,
    /// the launch and `verify` call the closure corrupt.
    @Test func anImagePathEditedWithoutTheBindingIsCorrupt() throws {
        let app = try FixtureApp.named("basic")
        let closure = try app.closure()
        var body = closure.encodedBody()
        let original = Array(closure.images[1].path.utf8)
        let start = try #require((0...(body.count - original.count)).first { body[$0..<($0 + original.count)].elementsEqual(original) })
        body[start + original.count - 1] ^= 0x01
        let path = try Scratch.directory("agreement-image-list") + "/forged.dyld3closure"
        defer { Scratch.remove((path as NSString).deletingLastPathComponent) }
        try Data(ClosureFile.wrapBody(body)).write(to: URL(fileURLWithPath: path))
        let corrupt = try #require(ClosureRefusal.corruption(path))
        #expect(corrupt.path == path && corrupt.what.contains("the image paths are not the list the binding covers"))
        #expect(ClosureRefusal.launchError(app, closurePath: path)?.kind == "corrupt")
        #expect(ClosureVerification(checking: path).status == .corrupt)
    }

    /// Root count 2 with no host: the fast path would take image 0 for a host and the
    /// second image for the main executable.
    @Test func aRootCountTheHostFieldContradictsIsCorrupt() async throws {
        let app = try FixtureApp.named("basic")
        var closure = try app.closure()
        #expect(closure.rootCount == 1 && closure.binding.host.isEmpty && closure.images.count >= 2)
        closure.rootCount = 2
        #expect(closure.consistencyProblems().contains { $0.contains("root count 2 disagrees") }, "\(closure.consistencyProblems())")
        let (cache, path) = try Self.plant(closure, for: app, "agreement-roots")
        defer { Scratch.remove(cache) }
        let corrupt = try #require(ClosureRefusal.corruption(path))
        #expect(corrupt.path == path && corrupt.offset > 0 && corrupt.what.contains("root count 2 disagrees with the binding"))
        #expect(ClosureVerification(checking: path).status == .corrupt)
        let result = try await Dyld3Binary.launchAuto(app, cache: cache)
        try ClosureRefusal.expectFallback(result, of: app) { $0.contains("root count 2 disagrees") }
    }

    /// One image listed twice in the initializer order: dyld runs an image's initializers once.
    @Test func anImageListedTwiceInTheInitializerOrderIsRefusedAtDecode() async throws {
        let app = try FixtureApp.named("init-order")
        var closure = try app.closure()
        let first = try #require(closure.initializerOrder.first)
        closure.initializerOrder.append(first)
        let (cache, path) = try Self.plant(closure, for: app, "agreement-initializers")
        defer { Scratch.remove(cache) }
        let corrupt = try #require(ClosureRefusal.corruption(path))
        #expect(corrupt.what.contains("initializer order names image \(first)") && corrupt.what.contains("twice"))
        let result = try await Dyld3Binary.launchAuto(app, cache: cache)
        #expect(result.json?["mode"] as? String == "dyld2", "\(result.stdout)")
        try ClosureRefusal.expectFallback(result, of: app) { $0.hasPrefix("corrupt:") }
    }

    /// A plan whose `__DATA` file offset is not page-aligned passes every structural check
    /// but cannot be mapped: the launch reports it as the closure's fault, naming the closure
    /// file, and `auto` falls back instead of failing.
    @Test func aPlanThatCannotBeMappedFallsBackNamingTheClosure() async throws {
        let app = try FixtureApp.named("basic")
        var closure = try app.closure()
        let main = closure.rootCount - 1
        var plan = closure.images[main].plan
        let data = try #require(plan.segments.firstIndex { $0.name == "__DATA" && $0.fileSize > 8 })
        plan.segments[data].fileOffset += 8
        plan.segments[data].fileSize -= 8
        closure.images[main].plan = plan
        let (cache, path) = try Self.plant(closure, for: app, "agreement-mapping")
        defer { Scratch.remove(cache) }
        #expect(try ClosureFile.read(path) == closure, "the forgery passes every structural check")
        let refusal = try #require(ClosureRefusal.launchError(app, closurePath: path))
        #expect(refusal.kind == "invalid" && "\(refusal)".hasPrefix(path))
        let result = try await Dyld3Binary.launchAuto(app, cache: cache)
        try ClosureRefusal.expectFallback(result, of: app) { reason in reason.hasPrefix("invalid:") && reason.contains(path) && reason.contains("__DATA") }
    }

    /// Image sizes that together exceed the address space: the reservation fails, and that
    /// is the closure's fault too.
    @Test func aReservationLargerThanTheAddressSpaceFallsBack() async throws {
        let app = try FixtureApp.named("basic")
        var closure = try app.closure()
        // Every image as large as the format allows (2^40 bytes), and enough copies of the
        // last image record to reserve more than the 2^47-byte user address space.
        for index in closure.images.indices { closure.images[index].plan.vmSize = 1 << 40 }
        let last = try #require(closure.images.last)
        while closure.images.count < 131 { closure.images.append(last) }
        let (cache, path) = try Self.plant(closure, for: app, "agreement-reserve")
        defer { Scratch.remove(cache) }
        _ = try ClosureFile.read(path)
        let result = try await Dyld3Binary.launchAuto(app, cache: cache)
        try ClosureRefusal.expectFallback(result, of: app) { reason in reason.hasPrefix("invalid:") && reason.contains(path) }
    }
}
