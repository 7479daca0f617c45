import Foundation
@testable import ClosureCache
import LoaderCore
import TestSupport
import Testing
@testable import ClosureFormat

/// A FIFO (or any file that is not a regular file) where an image or a closure should be:
/// every command refuses it at once, with the reason dyld2 gives (`not a regular file`),
/// instead of blocking in `open` for a writer that never comes. Each command runs as a child
/// killed after a limit, so a regression fails the test (status 137) instead of hanging it.
@Suite(.serialized, .bounded) struct SpecialFileTests {
    static let limitSeconds = 30
    static let reason = "not a regular file"

    /// The installed `basic` app (a scratch copy) whose Util dylib was replaced by a FIFO.
    static func appWithFIFOImage() throws -> (app: FixtureApp, cache: String, closurePath: String, fifo: String) {
        let app = try FixtureApp.named("basic").scratchCopy()
        let cache = try Scratch.directory("special-image")
        let path = try app.install(into: cache)
        let closure = try ClosureFile.read(path)
        let dylib = try #require(closure.images.first { $0.path.hasSuffix("/Util") }?.path)
        try FileManager.default.removeItem(atPath: dylib)
        #expect(mkfifo(dylib, 0o644) == 0)
        return (app, cache, path, dylib)
    }

    @Test func aFIFOInPlaceOfAnImageIsRefusedByEveryCommand() async throws {
        let (app, cache, closurePath, fifo) = try Self.appWithFIFOImage()
        defer { try? FileManager.default.removeItem(at: app.directory); Scratch.remove(cache) }
        let launch = ["launch", app.bundle, "--root", app.root, "--cache", cache]

        let auto = try await Dyld3Binary.run(launch + ["--mode", "auto"], limitSeconds: Self.limitSeconds)
        #expect(auto.status == 1, "auto: status \(auto.status) (137: it blocked): \(auto.stderr)")
        let lines = auto.stderr.split(separator: "\n").map(String.init)
        // The closure is not used, naming it and the image, then dyld2 refuses the same file the same way.
        #expect(lines.contains { $0.contains("closure not used") && $0.contains(closurePath) && $0.contains("\(fifo) is \(Self.reason)") }, "\(auto.stderr)")
        #expect(lines.last == "dyld3: \(fifo): \(Self.reason)", "\(auto.stderr)")

        let fast = try await Dyld3Binary.run(launch + ["--mode", "dyld3"], limitSeconds: Self.limitSeconds)
        #expect(fast.status == 1, "dyld3: status \(fast.status): \(fast.stderr)")
        #expect(fast.stderr == "dyld3: --mode dyld3: \(closurePath): stale: \(fifo) is \(Self.reason)\n", "\(fast.stderr)")

        let slow = try await Dyld3Binary.run(launch + ["--mode", "dyld2"], limitSeconds: Self.limitSeconds)
        #expect(slow.status == 1 && slow.stderr == "dyld3: \(fifo): \(Self.reason)\n", "dyld2: \(slow.status): \(slow.stderr)")

        let verify = try await Dyld3Binary.run(["verify", "--cache", cache, "--hash-images"], limitSeconds: Self.limitSeconds)
        #expect(verify.status == 4, "verify: status \(verify.status): \(verify.stdout) \(verify.stderr)")
        #expect(verify.stdout.contains("\(fifo) is \(Self.reason)"), "\(verify.stdout)")

        let compare = try await Dyld3Binary.run(["compare", app.bundle, "--root", app.root, "--cache", cache], limitSeconds: Self.limitSeconds)
        #expect(compare.status != 137 && compare.stderr.contains(Self.reason), "compare: \(compare.status): \(compare.stderr)")
    }

    /// A forged closure (valid checksum) whose image list names a FIFO outside the app.
    @Test func aForgedClosureNamingAFIFOIsRefusedWithoutBlocking() async throws {
        let app = try FixtureApp.named("basic")
        let cache = try Scratch.directory("special-forged")
        let elsewhere = try Scratch.directory("special-fifo")
        defer { Scratch.remove(cache); Scratch.remove(elsewhere) }
        let fifo = elsewhere + "/pipe"
        #expect(mkfifo(fifo, 0o644) == 0)
        var closure = try app.closure()
        let index = try #require(closure.images.indices.last)
        closure.images[index].path = fifo
        let path = ClosureCache(directory: cache).closurePath(forApp: app.executable, arch: app.arch)
        try ClosureFile.write(closure, to: path)

        let fast = try await Dyld3Binary.run(["launch", app.bundle, "--root", app.root, "--cache", cache, "--mode", "dyld3"],
                                             limitSeconds: Self.limitSeconds)
        #expect(fast.status == 1 && fast.stderr == "dyld3: --mode dyld3: \(path): stale: \(fifo) is \(Self.reason)\n",
                "\(fast.status): \(fast.stderr)")
        let auto = try await Dyld3Binary.run(["launch", app.bundle, "--root", app.root, "--cache", cache, "--mode", "auto", "--json"],
                                             limitSeconds: Self.limitSeconds)
        try ClosureRefusal.expectFallback(auto, of: app) { $0.contains(Self.reason) }
        let verify = try await Dyld3Binary.run(["verify", "--cache", cache], limitSeconds: Self.limitSeconds)
        #expect(verify.status == 4 && verify.stdout.contains("\(fifo) is \(Self.reason)"), "verify: \(verify.status): \(verify.stdout)")
    }
}
