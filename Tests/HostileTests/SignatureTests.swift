import Foundation
@testable import ClosureCache
import LoaderCore
import TestSupport
import Testing
import LaunchPlan
@testable import ClosureFormat
import LoaderSystem

/// Signed caches for distribution: `key generate`, `install --sign`, `--trust`. A signed
/// content-only cache copied to another directory tree verifies and launches there; one
/// changed byte, a missing signature or the wrong key is refused with a clear reason.
@Suite(.serialized, .bounded) struct SignatureTests {
    static func keys(_ name: String) async throws -> (directory: String, privateKey: String, publicKey: String) {
        let directory = try Scratch.directory("keys-\(name)")
        let result = try await Dyld3Binary.run(["key", "generate", "--out", directory])
        #expect(result.status == 0, "\(result.stderr)")
        return (directory, directory + "/closure-signing.key", directory + "/closure-signing.pub")
    }

    @Test func keyGenerationWritesAPrivateKeyOnlyItsOwnerCanRead() async throws {
        let keys = try await Self.keys("mode")
        defer { Scratch.remove(keys.directory) }
        let mode = try #require(FileStatus.of(keys.privateKey)).mode & 0o777
        #expect(mode == 0o600)
        #expect(FileStatus.of(keys.publicKey) != nil)
        let again = try await Dyld3Binary.run(["key", "generate", "--out", keys.directory])
        #expect(again.status == 1 && again.stderr.contains("never overwritten"), "\(again.stderr)")
        #expect(try ClosureSigningKey(contentsOf: keys.privateKey).trustKey.key.rawRepresentation
                == ClosureTrustKey(contentsOf: keys.publicKey).key.rawRepresentation)
    }

    @Test func aSignedContentOnlyCacheTravels() async throws {
        let app = try FixtureApp.named("init-order")
        let keys = try await Self.keys("travel")
        let built = try Scratch.directory("signed-built")
        let elsewhere = try Scratch.directory("signed-elsewhere")
        defer { Scratch.remove(keys.directory); Scratch.remove(built); Scratch.remove(elsewhere) }
        let install = try await Dyld3Binary.run(["install", app.bundle, "--root", app.root, "--cache", built, "--content-only", "--sign", keys.privateKey])
        #expect(install.status == 0, "\(install.stderr)")
        // Copied into another directory tree.
        let cache = elsewhere + "/deep/tree/cache"
        try FileManager.default.createDirectory(atPath: elsewhere + "/deep/tree", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: built, toPath: cache)
        let verify = try await Dyld3Binary.run(["verify", "--cache", cache, "--trust", keys.publicKey])
        #expect(verify.status == 0, "\(verify.stdout)")
        let launch = try await Dyld3Binary.run(["launch", app.bundle, "--root", app.root, "--cache", cache, "--mode", "dyld3", "--trust", keys.publicKey, "--json"])
        #expect(launch.status == 0, "\(launch.stderr)")
        #expect(launch.json?["mode"] as? String == "dyld3")
        #expect((launch.json?["result"] as? Int).map(Int32.init) == (try app.expectedResult))
        // Without --trust a signed closure is an ordinary closure.
        let plain = try await Dyld3Binary.launchAuto(app, cache: cache)
        #expect(plain.json?["mode"] as? String == "dyld3", "\(plain.stdout)")
    }

    enum Refusal: String, CaseIterable, CustomStringConvertible, Sendable {
        case changedByteWithChecksumRecomputed, changedSignatureByte, unsigned, signedByAnotherKey
        var description: String { rawValue }
    }

    @Test(arguments: Refusal.allCases)
    func trustRefuses(_ refusal: Refusal) async throws {
        let app = try FixtureApp.named("init-order")
        let keys = try await Self.keys("refuse"), other = try await Self.keys("other")
        let cache = try Scratch.directory("signed-refuse")
        defer { Scratch.remove(keys.directory); Scratch.remove(other.directory); Scratch.remove(cache) }
        let path = ClosureCache(directory: cache).closurePath(forApp: app.executable, arch: app.arch)
        let closure = try app.closure()
        let signer = try ClosureSigningKey(contentsOf: refusal == .signedByAnotherKey ? other.privateKey : keys.privateKey)
        var file = ClosureFile.encode(closure, signedWith: refusal == .unsigned ? nil : signer)
        switch refusal {
        case .changedByteWithChecksumRecomputed:
            file[ClosureFileHeader.size + 10] ^= 0x01
            let checksum = UnsafeHash.xxh3(file[16..<(file.count - ClosureFileHeader.signatureLength)])
            for index in 0..<8 { file[8 + index] = UInt8(truncatingIfNeeded: checksum >> (8 * UInt64(index))) }
        case .changedSignatureByte: file[file.count - 1] ^= 0x80
        case .unsigned, .signedByAnotherKey: break
        }
        try Data(file).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: 0o444], ofItemAtPath: path)
        let expected = refusal == .unsigned ? "is not signed" : "signature does not verify"
        let launch = try await Dyld3Binary.run(["launch", app.bundle, "--root", app.root, "--cache", cache, "--trust", keys.publicKey, "--json"])
        let reason = launch.json?["fallback_reason"] as? String ?? ""
        #expect(reason.hasPrefix("untrusted:") && reason.contains(expected) && reason.contains(path), "\(refusal): \(reason)")
        #expect(launch.json?["mode"] as? String == "dyld2")
        let verify = try await Dyld3Binary.run(["verify", "--cache", cache, "--trust", keys.publicKey])
        #expect(verify.status == 5 && verify.stdout.contains(expected), "\(refusal): \(verify.stdout)")
    }
}
