import Foundation
@testable import ClosureCache
import LoaderCore
import TestSupport
import Testing
import LaunchPlan
@testable import ClosureFormat
import LoaderSystem

/// Key files checked as ssh checks its keys: a private key others can read or write, or
/// that belongs to someone else, is refused; a trust key others can write, or that belongs
/// to another user than the invoking one or root, is refused. `launch --rebuild` under
/// `--trust` never replaces a signed closure with an unsigned one.
@Suite(.serialized, .bounded) struct KeyFileTests {
    static var isRoot: Bool { geteuid() == 0 }

    @Test(arguments: [0o644, 0o640, 0o604, 0o660, 0o666])
    func aPrivateKeyOthersCanReadOrWriteIsRefused(_ mode: Int) async throws {
        let keys = try await SignatureTests.keys("exposed")
        defer { Scratch.remove(keys.directory) }
        #expect(chmod(keys.privateKey, mode_t(mode)) == 0)
        #expect {
            _ = try ClosureSigningKey(contentsOf: keys.privateKey)
        } throws: { error in
            "\(error)" == "\(keys.privateKey): refused: the private key is readable or writable by group or others (mode \(String(mode, radix: 8))): "
                + "chmod 600 it, and treat it as leaked if others could read it"
        }
        let app = try FixtureApp.named("basic")
        let cache = try Scratch.directory("exposed-cache")
        defer { Scratch.remove(cache) }
        let install = try await Dyld3Binary.run(["install", app.bundle, "--root", app.root, "--cache", cache, "--sign", keys.privateKey])
        #expect(install.status != 0 && install.stderr.contains("chmod 600"), "\(install.status): \(install.stderr)")
        #expect(ClosureCache(directory: cache).files().isEmpty, "a closure was signed with the exposed key")
    }

    @Test(.enabled(if: KeyFileTests.isRoot, "chown needs root")) func aPrivateKeyOwnedByAnotherUserIsRefused() async throws {
        let keys = try await SignatureTests.keys("foreign-private")
        defer { Scratch.remove(keys.directory) }
        #expect(chown(keys.privateKey, 65534, 65534) == 0)
        #expect {
            _ = try ClosureSigningKey(contentsOf: keys.privateKey)
        } throws: { error in
            "\(error)".contains("the private key is owned by uid 65534, not by you (uid 0)")
        }
    }

    @Test(arguments: [0o664, 0o646, 0o666])
    func aTrustKeyOthersCanWriteIsRefused(_ mode: Int) async throws {
        let keys = try await SignatureTests.keys("writable-trust")
        defer { Scratch.remove(keys.directory) }
        #expect(chmod(keys.publicKey, mode_t(mode)) == 0)
        #expect {
            _ = try ClosureTrustKey(contentsOf: keys.publicKey)
        } throws: { error in
            "\(error)" == "\(keys.publicKey): refused: the trust key is writable by group or others (mode \(String(mode, radix: 8))): chmod go-w it"
        }
        let verify = try await Dyld3Binary.run(["verify", "--cache", keys.directory, "--trust", keys.publicKey])
        #expect(verify.status != 0 && verify.stderr.contains("chmod go-w"), "\(verify.status): \(verify.stderr)")
    }

    @Test(.enabled(if: KeyFileTests.isRoot, "chown needs root")) func aTrustKeyOwnedByAnotherUserIsRefusedAndRootsIsAccepted() async throws {
        let keys = try await SignatureTests.keys("foreign-trust")
        defer { Scratch.remove(keys.directory) }
        #expect(chown(keys.publicKey, 65534, 65534) == 0 && chmod(keys.publicKey, 0o666) == 0)
        #expect {
            _ = try ClosureTrustKey(contentsOf: keys.publicKey)
        } throws: { error in
            "\(error)".contains("the trust key is owned by uid 65534, not by you (uid 0) or root")
        }
        #expect(chmod(keys.publicKey, 0o644) == 0 && chown(keys.publicKey, 0, 0) == 0)
        _ = try ClosureTrustKey(contentsOf: keys.publicKey)
    }

    /// The policy for another user than root, without changing owners.
    @Test func thePolicyFollowsSsh() throws {
        let user: UInt32 = 1000
        func check(_ mode: UInt32, owner: UInt32, _ kind: ClosureKeyPolicy.Kind) -> ClosureKeyPolicy.Problem? {
            ClosureKeyPolicy.check(FileStatus(size: 80, mode: 0o100000 | mode, ownerID: owner), kind: kind, user: user)
        }
        #expect(check(0o600, owner: user, .signing) == nil)
        #expect(check(0o400, owner: user, .signing) == nil)
        #expect(check(0o600, owner: 0, .signing) == .owner(kind: .signing, owner: 0, user: user))
        #expect(check(0o644, owner: user, .signing) == .privateKeyExposed(mode: 0o100644))
        #expect(check(0o644, owner: user, .trust) == nil)
        #expect(check(0o644, owner: 0, .trust) == nil)
        #expect(check(0o644, owner: 1001, .trust) == .owner(kind: .trust, owner: 1001, user: user))
        #expect(check(0o664, owner: user, .trust) == .trustKeyWritable(mode: 0o100664))
    }

    /// A stale signed closure, `launch --trust PUB --rebuild`: without a signing key the
    /// closure is left as it was and the launch says why; with `--sign` the fresh closure is
    /// signed, and the next `--trust` launch uses it.
    @Test func rebuildUnderTrustNeverWritesAnUnsignedClosure() async throws {
        let app = try FixtureApp.named("basic").scratchCopy()
        defer { try? FileManager.default.removeItem(at: app.directory) }
        let keys = try await SignatureTests.keys("rebuild")
        let cache = try Scratch.directory("rebuild-cache")
        defer { Scratch.remove(keys.directory); Scratch.remove(cache) }
        let install = try await Dyld3Binary.run(["install", app.bundle, "--root", app.root, "--cache", cache, "--sign", keys.privateKey])
        #expect(install.status == 0, "\(install.stderr)")
        let path = ClosureCache(directory: cache).closurePath(forApp: app.executable, arch: app.arch)
        let signed = try Data(contentsOf: URL(fileURLWithPath: path))
        // Stale: the main executable's size changes.
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: app.executable))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(repeating: 0, count: 16))
        try handle.close()
        let launch = ["launch", app.bundle, "--root", app.root, "--cache", cache, "--mode", "auto", "--trust", keys.publicKey, "--rebuild"]
        let refused = try await Dyld3Binary.run(launch)
        #expect(refused.status == 0, "\(refused.stderr)")
        #expect(refused.stderr.contains("no closure written to \(path): --trust uses only signed closures"), "\(refused.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == signed, "the signed closure was replaced")

        let rebuilt = try await Dyld3Binary.run(launch + ["--sign", keys.privateKey])
        #expect(rebuilt.status == 0 && rebuilt.stderr.contains("wrote a fresh closure"), "\(rebuilt.stderr)")
        #expect(ClosureFile.isSigned(path))
        let next = try await Dyld3Binary.run(["launch", app.bundle, "--root", app.root, "--cache", cache, "--mode", "dyld3",
                                              "--trust", keys.publicKey, "--json"])
        #expect(next.status == 0 && next.json?["mode"] as? String == "dyld3", "\(next.stderr)")
    }
}
