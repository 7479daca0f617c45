import Foundation
@testable import ClosureCache
import LoaderCore
import TestSupport
import Testing
import LaunchPlan
@testable import ClosureFormat
import LoaderSystem

/// The directories above the cache, checked as OpenSSH's `secure_path` checks them, on the
/// real path (symlinks resolved first): each must be owned by the user or root and not
/// writable by group or others unless sticky. Whoever can rename a directory above the cache
/// can put another cache, and other closures, in its place.
@Suite(.serialized, .bounded) struct CacheAncestorTests {
    static var isRoot: Bool { geteuid() == 0 }

    /// The policy on a table of directories, for a user other than root.
    @Test func thePolicyFollowsSecurePath() {
        let user: UInt32 = 1000
        func check(_ table: [String: (mode: UInt32, owner: UInt32)], link: [String: String] = [:]) -> ClosureOwnership.Problem? {
            ClosureOwnership.checkAncestors(
                of: "/home/u/cache", user: user, realPath: { link[$0] ?? $0 },
                status: { path in table[path].map { FileStatus(size: 0, mode: 0o040000 | $0.mode, ownerID: $0.owner) } })
        }
        let secure: [String: (mode: UInt32, owner: UInt32)] = ["/": (0o755, 0), "/home": (0o755, 0), "/home/u": (0o700, user)]
        #expect(check(secure) == nil)
        var foreign = secure
        foreign["/home/u"] = (0o755, 1001)
        #expect(check(foreign) == .ancestorOwner(path: "/home/u", owner: 1001, user: user))
        var groupWritable = secure
        groupWritable["/home"] = (0o775, 0)
        #expect(check(groupWritable) == .ancestorWritable(path: "/home", mode: 0o040775))
        // A sticky world-writable ancestor (/tmp) is accepted: others cannot rename what it holds.
        let sticky: [String: (mode: UInt32, owner: UInt32)] = ["/": (0o755, 0), "/tmp": (0o1777, 0), "/tmp/u": (0o755, user)]
        #expect(check(sticky, link: ["/home/u/cache": "/tmp/u/cache"]) == nil)
        // The real path is checked, not the path as given.
        let elsewhere: [String: (mode: UInt32, owner: UInt32)] = secure.merging(["/srv": (0o777, 0)]) { $1 }
        #expect(check(elsewhere, link: ["/home/u/cache": "/srv/cache"]) == .ancestorWritable(path: "/srv", mode: 0o040777))
        #expect(check(secure, link: ["/home/u/cache": "/gone/cache"]) == .unresolvable(directory: "/home/u/cache"))
    }

    /// A cache whose parent directory is group-writable, reached directly or through a
    /// symlink from a safe place (to the cache, or to its parent): launches refuse its closure (auto falls back), verify
    /// calls it untrusted. Made safe again, the same cache is used through the link.
    @Test func aCacheUnderAGroupWritableDirectoryIsRefusedThroughASymlinkToo() async throws {
        let (app, scratch, parent, real) = try Self.installUnderParent("ancestor-writable", parent: "shared")
        defer { Scratch.remove(scratch) }
        #expect(chmod(parent, 0o775) == 0)
        let link = scratch + "/cache-link"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: real)
        // A link above the cache rather than at it: the cache's own path is no link.
        try FileManager.default.createSymbolicLink(atPath: scratch + "/parent-link", withDestinationPath: parent)
        for cache in [real, link, scratch + "/parent-link/cache"] {
            Self.expectUntrusted(app, cache: cache) {
                $0 == "\(parent), above its directory, is writable by group or others (mode 775) and not sticky: they could replace the cache"
            }
            let launch = try await Dyld3Binary.launchAuto(app, cache: cache)
            #expect(launch.status == 0, "\(launch.stderr)")
            #expect((launch.json?["fallback_reason"] as? String)?.hasPrefix("untrusted:") == true, "\(cache): \(launch.stdout)")
            let verify = try await Dyld3Binary.verify(cache)
            #expect(verify.status == 5, "\(cache): \(verify.stdout)")
        }
        #expect(chmod(parent, 0o755) == 0)
        let launch = try await Dyld3Binary.launchAuto(app, cache: link)
        #expect(launch.json?["mode"] as? String == "dyld3", "\(launch.stdout) \(launch.stderr)")
    }

    @Test(.enabled(if: CacheAncestorTests.isRoot, "chown needs root"))
    func aCacheUnderADirectoryOwnedByAnotherUserIsRefused() async throws {
        let (app, scratch, parent, real) = try Self.installUnderParent("ancestor-owner", parent: "theirs")
        defer { Scratch.remove(scratch) }
        #expect(chown(parent, 65534, 65534) == 0)
        Self.expectUntrusted(app, cache: real) {
            $0.hasPrefix("\(parent), above its directory, is owned by uid 65534, not by you (uid 0) or root")
        }
        let launch = try await Dyld3Binary.launchAuto(app, cache: real)
        #expect((launch.json?["fallback_reason"] as? String)?.hasPrefix("untrusted:") == true, "\(launch.stdout)")
        let install = try await Dyld3Binary.run(["install", app.bundle, "--root", app.root, "--cache", real])
        #expect(install.stderr.contains("launches will refuse closures in \(real)") && install.stderr.contains("uid 65534"), "\(install.stderr)")
    }

    /// The basic fixture installed into `<scratch>/<parent>/cache` (the caller removes `scratch`).
    static func installUnderParent(_ name: String, parent: String) throws -> (app: FixtureApp, scratch: String, parent: String, cache: String) {
        let app = try FixtureApp.named("basic")
        let scratch = try Scratch.directory(name)
        let parent = scratch + "/" + parent
        try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: false)
        try app.install(into: parent + "/cache")
        return (app, scratch, parent, parent + "/cache")
    }

    /// Expects the app's closure in `cache` to be refused as untrusted, for a reason `reason` accepts.
    static func expectUntrusted(_ app: FixtureApp, cache: String, _ reason: (String) -> Bool) {
        let path = ClosureCache(directory: cache).closurePath(forApp: app.executable, arch: app.arch)
        #expect {
            _ = try ClosureFile.read(path)
        } throws: { error in
            guard case let .untrusted(_, what) = error as? ClosureError else { return false }
            return reason(what)
        }
    }
}
