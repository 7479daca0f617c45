import Foundation
import ClosureCache
import TestSupport
import Testing
import ClosureFormat

/// Closures others could have written are refused with the reason; a cache that cannot be
/// written gets a clear error; `verify` names files that are not closures.
@Suite(.serialized, .bounded) struct HygieneTests {
    static func fallback(_ app: FixtureApp, _ cache: String) async throws -> String? {
        try await Dyld3Binary.launchAuto(app, cache: cache).json?["fallback_reason"] as? String
    }

    @Test func closuresOthersCanWriteAreRefused() async throws {
        let app = try FixtureApp.named("init-order")
        let cache = try Scratch.directory("hygiene")
        defer { Scratch.remove(cache) }
        let path = try app.install(into: cache)
        #expect(try await Self.fallback(app, cache) == nil)
        for mode in [0o664, 0o646, 0o666] {
            #expect(chmod(path, mode_t(mode)) == 0)
            let reason = try await Self.fallback(app, cache)
            #expect(reason?.hasPrefix("untrusted: ") == true && reason?.contains("writable by group or others") == true, "\(String(describing: reason))")
        }
        #expect(chmod(path, 0o444) == 0)
        #expect(chmod(cache, 0o777) == 0)
        let directoryReason = try await Self.fallback(app, cache)
        #expect(directoryReason?.hasPrefix("untrusted: ") == true && directoryReason?.contains("directory is writable by group or others") == true, "\(String(describing: directoryReason))")
        // A sticky world-writable directory (like /tmp) protects each owner's files.
        #expect(chmod(cache, 0o1777) == 0)
        #expect(try await Self.fallback(app, cache) == nil)
        #expect(chmod(cache, 0o755) == 0)
        let verify = try await Dyld3Binary.run(["verify", "--cache", cache])
        #expect(verify.status == 0)
    }

    @Test func unusableCacheDirectoriesGetAClearError() async throws {
        let app = try FixtureApp.named("basic")
        let scratch = try Scratch.directory("hygiene-dirs")
        defer { Scratch.remove(scratch) }
        let file = scratch + "/a-file"
        #expect(FileManager.default.createFile(atPath: file, contents: Data("x".utf8)))
        let notADirectory = try await Dyld3Binary.run(["install", app.bundle, "--root", app.root, "--cache", file])
        #expect(notADirectory.status == 1 && notADirectory.stderr.contains("the cache path is not a directory"), "\(notADirectory.stderr)")
        let underAFile = try await Dyld3Binary.run(["install", app.bundle, "--root", app.root, "--cache", file + "/cache"])
        #expect(underAFile.status == 1 && underAFile.stderr.contains("cannot create the cache directory"), "\(underAFile.stderr)")
        let missing = try await Dyld3Binary.run(["verify", "--cache", scratch + "/nowhere"])
        #expect(missing.status == 2 && missing.stderr.contains("\(scratch)/nowhere: no cache directory"))
        #expect(!FileManager.default.fileExists(atPath: scratch + "/nowhere"))
        // A launch with a missing cache falls back, saying the closure is missing.
        let reason = try await Self.fallback(app, scratch + "/nowhere")
        #expect(reason?.hasPrefix("missing: ") == true)
    }

    @Test func verifyReportsFilesThatAreNotClosures() async throws {
        let app = try FixtureApp.named("basic")
        let cache = try Scratch.directory("hygiene-verify")
        defer { Scratch.remove(cache) }
        try app.install(into: cache)
        #expect(FileManager.default.createFile(atPath: cache + "/notes.txt", contents: Data("hello".utf8), attributes: [.posixPermissions: 0o644]))
        #expect(FileManager.default.createFile(atPath: cache + "/0000000000000000-x86_64.dyld3closure", contents: Data(repeating: 7, count: 64),
                                               attributes: [.posixPermissions: 0o644]))
        let verify = try await Dyld3Binary.run(["verify", "--cache", cache])
        #expect(verify.status == 3)
        #expect(verify.stdout.contains("notes.txt: not-a-closure"), "\(verify.stdout)")
        #expect(verify.stdout.contains("0000000000000000-x86_64.dyld3closure: not-a-closure"), "\(verify.stdout)")
        #expect(verify.stdout.contains("verify: 3 closures, 1 valid, 0 corrupt, 0 stale, 2 not-a-closure"), "\(verify.stdout)")
    }
}
