import Foundation
@testable import ClosureCache
import LoaderCore
import TestSupport
import Testing
@testable import ClosureFormat
import LoaderSystem

/// StrictModes for closures: a closure another user could have written is not used. The
/// victim runs as `nobody` (through `setpriv`), the other user is `daemon`; the test itself
/// must be root to set owners. The policy itself is checked everywhere.
@Suite(.serialized, .bounded) struct OwnershipTests {
    static let victim = Dyld3Binary.User.nobody
    static let attacker = Dyld3Binary.User.daemon

    /// Root, with setpriv, and `nobody` able to run the built binary.
    @Sendable static func canSwitchUsers() async -> Bool {
        guard geteuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"),
              let result = try? await Dyld3Binary.run(["--help"], as: victim) else { return false }
        return result.status == 0
    }

    @Test func policyMatrix() {
        let me: UInt32 = 1000, other: UInt32 = 1001
        func file(_ owner: UInt32, _ mode: UInt32) -> FileStatus { FileStatus(size: 1, mode: 0o100000 | mode, ownerID: owner) }
        func directory(_ owner: UInt32, _ mode: UInt32) -> FileStatus { FileStatus(size: 0, mode: 0o040000 | mode, ownerID: owner) }
        let cases: [(String, FileStatus, FileStatus, Bool)] = [
            ("mine in my directory", file(me, 0o444), directory(me, 0o755), true),
            ("root's in my directory", file(0, 0o644), directory(me, 0o755), true),
            ("mine in root's directory", file(me, 0o444), directory(0, 0o755), true),
            ("another user's file", file(other, 0o644), directory(me, 0o755), false),
            ("group-writable file", file(me, 0o664), directory(me, 0o755), false),
            ("another user's directory", file(me, 0o444), directory(other, 0o755), false),
            ("group-writable directory", file(me, 0o444), directory(me, 0o775), false),
            ("world-writable directory", file(me, 0o444), directory(0, 0o777), false),
            ("mine in a sticky world-writable directory", file(me, 0o444), directory(0, 0o1777), true),
            ("another's in a sticky world-writable directory", file(other, 0o444), directory(0, 0o1777), false),
            ("root's in a sticky world-writable directory", file(0, 0o444), directory(0, 0o1777), false),
        ]
        for (name, fileStatus, directoryStatus, trusted) in cases {
            let problem = ClosureOwnership.check(file: fileStatus, directory: directoryStatus, user: me)
            #expect((problem == nil) == trusted, "\(name): \(problem.map { "\($0)" } ?? "trusted")")
        }
    }

    /// A cache owned and moded as `setUp` leaves it, with the app's closure in it.
    static func cache(_ purpose: String, _ setUp: (_ cache: String, _ closure: String) throws -> Void) throws -> (app: FixtureApp, cache: String, closure: String) {
        let app = try FixtureApp.named("basic")
        let cache = try Scratch.directory("owner-\(purpose)")
        let closure = try app.install(into: cache)
        try FileManager.default.setAttributes([.ownerAccountID: victim.uid, .groupOwnerAccountID: victim.gid], ofItemAtPath: cache)
        try FileManager.default.setAttributes([.ownerAccountID: victim.uid, .groupOwnerAccountID: victim.gid], ofItemAtPath: closure)
        try setUp(cache, closure)
        return (app, cache, closure)
    }

    static func own(_ path: String, _ user: Dyld3Binary.User, mode: Int? = nil) throws {
        var attributes: [FileAttributeKey: Any] = [.ownerAccountID: user.uid, .groupOwnerAccountID: user.gid]
        if let mode { attributes[.posixPermissions] = mode }
        try FileManager.default.setAttributes(attributes, ofItemAtPath: path)
    }

    static func launchAsVictim(_ app: FixtureApp, cache: String) async throws -> Dyld3Binary.Result {
        try await Dyld3Binary.run(["launch", app.bundle, "--root", app.root, "--cache", cache, "--mode", "auto", "--json"], as: victim)
    }

    enum Untrusted: String, CaseIterable, CustomStringConvertible, Sendable {
        case fileOwnedByAnotherUser, directoryOwnedByAnotherUser, groupWritableDirectory, plantedInAStickyDirectory
        var description: String { rawValue }
    }

    @Test(.enabled("needs root, /usr/bin/setpriv, and nobody able to run .build/debug/dyld3", canSwitchUsers),
          arguments: Untrusted.allCases)
    func untrustedClosureIsNotUsed(_ kind: Untrusted) async throws {
        let (app, cache, closure) = try Self.cache(kind.rawValue) { cache, closure in
            switch kind {
            case .fileOwnedByAnotherUser: try Self.own(closure, Self.attacker, mode: 0o644)
            case .directoryOwnedByAnotherUser: try Self.own(cache, Self.attacker, mode: 0o755)
            case .groupWritableDirectory: try Self.own(cache, Self.victim, mode: 0o775)
            case .plantedInAStickyDirectory:
                try Self.own(cache, .root, mode: 0o1777)
                try Self.own(closure, Self.attacker, mode: 0o444)
            }
        }
        defer { Scratch.remove(cache) }
        let launch = try await Self.launchAsVictim(app, cache: cache)
        try ClosureRefusal.expectFallback(launch, of: app) { reason in reason.hasPrefix("untrusted:") && reason.contains(closure) }

        let verify = try await Dyld3Binary.run(["verify", "--cache", cache], as: Self.victim)
        #expect(verify.status == 5, "\(kind): \(verify.stdout)")
        #expect(verify.lines.first?.hasPrefix("\(closure): untrusted: ") == true, "\(verify.stdout)")

        let install = try await Dyld3Binary.run(["install", app.bundle, "--root", app.root, "--cache", cache], as: Self.victim)
        switch kind {
        case .fileOwnedByAnotherUser:
            // The victim owns the directory: the planted file is replaced, and install says so.
            #expect(install.status == 0, "\(install.stderr)")
            #expect(install.stderr.contains("replaced an untrusted closure"), "\(install.stderr)")
            let relaunch = try await Self.launchAsVictim(app, cache: cache)
            #expect(relaunch.json?["mode"] as? String == "dyld3", "\(relaunch.stdout)")
        case .plantedInAStickyDirectory:
            // The sticky bit keeps the planted file where it is: install says it cannot replace it.
            #expect(install.status == 1)
            #expect(install.stderr.contains("cannot replace the untrusted closure"), "\(install.stderr)")
        case .directoryOwnedByAnotherUser, .groupWritableDirectory:
            #expect(install.stderr.contains("launches will refuse closures in"), "\(install.stderr)")
        }
    }

    enum Trusted: String, CaseIterable, CustomStringConvertible, Sendable {
        case ownFileInAStickyDirectory, rootsFileInOwnDirectory
        var description: String { rawValue }
    }

    @Test(.enabled("needs root, /usr/bin/setpriv, and nobody able to run .build/debug/dyld3", canSwitchUsers),
          arguments: Trusted.allCases)
    func trustedClosureIsUsed(_ kind: Trusted) async throws {
        let (app, cache, closure) = try Self.cache(kind.rawValue) { cache, closure in
            switch kind {
            case .ownFileInAStickyDirectory: try Self.own(cache, .root, mode: 0o1777)
            case .rootsFileInOwnDirectory: try Self.own(closure, .root, mode: 0o644)
            }
        }
        defer { Scratch.remove(cache) }
        let launch = try await Self.launchAsVictim(app, cache: cache)
        #expect(launch.json?["mode"] as? String == "dyld3", "\(kind): \(launch.stdout) \(launch.stderr)")
        #expect((try await Dyld3Binary.run(["verify", "--cache", cache], as: Self.victim)).status == 0, "\(closure)")
    }
}
