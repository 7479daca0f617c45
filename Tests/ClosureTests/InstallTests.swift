import TestSupport
import Dyld2
import Foundation
import ClosureCache
import LoaderCore
import Testing
import ClosureFormat
import LaunchPlan

extension ClosureTests {
    @Test func fixturesAreBuilt() throws {
        #expect(try FixtureApp.all().count == 76)
        #expect(Self.launchable.count == 68)
        #expect(Self.failing.count == 8)
    }

    /// Every app that launches gets a closure that reads back, is consistent, is current,
    /// and verifies as valid.
    @Test(arguments: launchable)
    func installedClosureVerifies(_ app: FixtureApp) throws {
        let cache = try Scratch.directory("cache")
        defer { Scratch.remove(cache) }
        let path = try app.install(into: cache)
        let closure = try ClosureFile.read(path)
        #expect(closure.images.count > 1)
        #expect(closure.consistencyProblems() == [], "\(app)")
        #expect(closure.staleImages().isEmpty, "\(app)")
        let verdict = ClosureVerification(checking: path)
        #expect(verdict.status == .valid, "\(app): \(verdict.problems)")
        #expect(verdict.problems.isEmpty)
    }

    /// The closure's decoded fixups are the slow path's resolved fixups: per image, the same
    /// number written and the same final location → fixup map.
    @Test(arguments: launchable)
    func decodedFixupsEqualTheSlowPathsResolvedFixups(_ app: FixtureApp) throws {
        let closure = try app.closure()
        let launch = try SlowPath.launch(LaunchOptions(roots: [app.executable], arch: app.arch, root: app.root, run: false, recordFixups: true))
        defer { launch.memory.release() }
        let recorded = try #require(launch.fixups)
        #expect(closure.images.map(\.path) == launch.report.images)
        try #require(recorded.count == closure.images.count)
        var compared = 0
        for index in closure.images.indices {
            let decoded = try closure.fixups(ofImage: index)
            #expect(decoded.count == recorded[index].count, "\(app) image \(index)")
            let expected = finalFixups(recorded[index])
            #expect(finalFixups(decoded) == expected, "\(app): \(closure.images[index].path)")
            compared += expected.count
        }
        #expect(compared > 0)
    }

    @Test func buildingIsReproducible() throws {
        let cache = try Scratch.directory("reproducible")
        defer { Scratch.remove(cache) }
        var compared = 0
        for app in Self.launchable {
            let first = try app.closure()
            let second = try app.closure()
            let bytes = ClosureFile.encode(first)
            #expect(bytes == ClosureFile.encode(second), "\(app)")
            #expect(try ClosureFile.decode(bytes, path: "memory") == first, "\(app)")
            try ClosureFile.write(first, to: cache + "/a.dyld3closure")
            try ClosureFile.write(second, to: cache + "/b.dyld3closure")
            let a = try #require(FileManager.default.contents(atPath: cache + "/a.dyld3closure"))
            let b = try #require(FileManager.default.contents(atPath: cache + "/b.dyld3closure"))
            #expect(a == b && Array(a) == bytes, "\(app)")
            // Writing over an existing (read-only) closure replaces it atomically.
            try ClosureFile.write(first, to: cache + "/a.dyld3closure")
            compared += 1
        }
        #expect(compared == Self.launchable.count)
    }

    /// Content-only closures do not change when the app's files are touched; full-identity
    /// ones see the new mtimes, hash the contents, and still validate.
    @Test func touchingChangesOnlyFullIdentities() async throws {
        let original = try #require(Self.launchable.first { $0.name == "init-order" && $0.variant == "x86_64-chained" })
        let app = try original.scratchCopy()
        defer { Scratch.remove(app.directory.path) }
        let contentOnly = ClosureFile.encode(try app.closure(contentOnly: true))
        let full = try app.closure()
        let cache = try Scratch.directory("touch")
        defer { Scratch.remove(cache) }
        let fullPath = try app.install(into: cache)

        let touched = Date(timeIntervalSince1970: 1_600_000_000)
        for image in full.images where image.path.hasPrefix(app.directory.path) {
            try FileManager.default.setAttributes([.modificationDate: touched], ofItemAtPath: image.path)
        }
        #expect(ClosureFile.encode(try app.closure(contentOnly: true)) == contentOnly)
        let rebuilt = try app.closure()
        #expect(rebuilt != full, "the full identity records mtimes")
        #expect(rebuilt.images.contains { $0.identity.mtimeSeconds == 1_600_000_000 })
        #expect(full.staleImages().isEmpty)
        #expect(ClosureVerification(checking: fullPath).status == .valid)
        #expect(try await Dyld3Binary.verify(cache).status == 0)
    }

    /// An app that cannot launch gets no closure: the builder throws the slow path's error.
    @Test(arguments: failing)
    func appThatCannotLaunchGetsNoClosure(_ app: FixtureApp) throws {
        let options = LaunchOptions(roots: [app.executable], arch: app.arch, root: app.root, run: false)
        let slowError = try #require(throws: LoadError.self) { _ = try SlowPath.launch(options) }
        let buildError = try #require(throws: LoadError.self) { _ = try app.closure() }
        #expect(buildError == slowError)
        switch buildError {
        case .missingDylib, .missingSymbol: break
        default: Issue.record("\(app): unexpected \(buildError)")
        }
    }
}
