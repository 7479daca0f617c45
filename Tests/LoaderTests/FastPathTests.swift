import LaunchComparison
import TestSupport
import Dyld2
import Dyld3
import Foundation
import ClosureCache
import LoaderCore
import Testing
import ClosureFormat
import LaunchPlan

/// The dyld3 fast path: it must give exactly what the slow path gives, and every closure it
/// cannot trust must be refused with the right reason before anything is written.
@Suite(.bounded) struct FastPathTests {
    static let launchable = SlowPathTests.apps.filter(\.launches)

    /// A fresh cache directory holding the closure of `app`.
    static func install(_ app: FixtureApp, contentOnly: Bool = false) throws -> (cache: String, closure: String) {
        let cache = FileManager.default.temporaryDirectory.appendingPathComponent("dyld3-fast-\(UUID().uuidString)").path
        return (cache, try app.install(into: cache, contentOnly: contentOnly))
    }

    @Test(arguments: launchable)
    func compareFindsNoDifference(_ app: FixtureApp) throws {
        let closure = try app.closure()
        let comparison = try LaunchComparison.run(
            options: LaunchOptions(roots: [app.executable], arch: app.arch, root: app.root), closure: closure, closurePath: "(built in memory)")
        #expect(comparison.differences.isEmpty, "\(app): \(comparison.differences)")
        #expect(comparison.fixupsCompared > 0 && comparison.bytesCompared > 0)
        if app.arch == CodeRunner.hostArchitecture, case let .result(expected, _) = app.expectation {
            #expect(comparison.dyld3Result == expected)
        }
    }

    @Test(arguments: launchable.filter { $0.arch == CodeRunner.hostArchitecture })
    func fastPathRunsToTheManifestResult(_ app: FixtureApp) throws {
        let (cache, path) = try Self.install(app)
        defer { try? FileManager.default.removeItem(atPath: cache) }
        let launch = try FastPath.launch(closurePath: path, request: LaunchOptions(roots: [app.executable], arch: app.arch, root: app.root))
        defer { launch.memory.release() }
        guard case let .result(expected, initOrder) = app.expectation else { return }
        #expect(launch.report.mode == "dyld3")
        #expect(launch.report.result == expected)
        if let initOrder { #expect(launch.report.initializers.map(app.imageName) == initOrder) }
    }

    @Test func damagedClosuresAreRefusedWithTheRightReason() throws {
        let original = try #require(Self.launchable.first { $0.name == "reexport" && $0.variant == "x86_64-chained" })
        guard case let .result(expected, _) = original.expectation else { return }
        let app = try original.scratchCopy()
        let dylib = app.bundle + "/Frameworks/libInner.dylib"
        #expect(FileManager.default.fileExists(atPath: dylib))

        func refusal(fallbackLaunches: Bool = true, _ damage: (String) throws -> Void) throws -> ClosureError? {
            let (cache, path) = try Self.install(app)
            defer { try? FileManager.default.removeItem(atPath: cache) }
            try damage(path)
            do {
                let launch = try FastPath.launch(closurePath: path, request: LaunchOptions(roots: [app.executable], arch: app.arch, root: app.root))
                launch.memory.release()
                return nil
            } catch let error as ClosureError {
                // The fallback still gives the right answer (or, with an image gone, the slow path's error).
                let options = LaunchOptions(roots: [app.executable], arch: app.arch, root: app.root)
                if fallbackLaunches {
                    let slow = try SlowPath.launch(options)
                    #expect(slow.report.result == expected)
                    slow.memory.release()
                } else {
                    #expect(throws: LoadError.self) { try SlowPath.launch(options) }
                }
                return error
            }
        }
        func rewrite(_ path: String, _ change: (inout [UInt8]) -> Void) throws {
            var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
            change(&bytes)
            try FileManager.default.removeItem(atPath: path)
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            chmod(path, 0o444)
        }

        #expect(try refusal { try FileManager.default.removeItem(atPath: $0) }?.kind == "missing")
        #expect(try refusal { try rewrite($0) { $0[$0.count / 2] ^= 0x40 } }?.kind == "corrupt")
        #expect(try refusal { try rewrite($0) { $0.removeLast(7) } }?.kind == "corrupt")
        // Touched: stat differs, content hash matches: still valid.
        #expect(try refusal { _ in
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: 3600)], ofItemAtPath: dylib)
        } == nil)
        // New content of the same size (signed again, as a user who changes a signed image must).
        #expect(try refusal { _ in
            var failure: (any Error)?
            try rewrite(dylib) { bytes in
                do { try SignedImageEdit.changeUnusedByteAndResign(&bytes) } catch { failure = error }
            }
            if let failure { throw failure }
        }?.kind == "stale")
        // Removed.
        let removed = try refusal(fallbackLaunches: false) { _ in try FileManager.default.moveItem(atPath: dylib, toPath: dylib + ".gone") }
        #expect(removed?.kind == "stale")
        #expect(removed?.description.contains("was removed") == true)
        try FileManager.default.moveItem(atPath: dylib + ".gone", toPath: dylib)
    }

    @Test func aThousandFastLaunchesLeaveNoMappings() throws {
        let app = try #require(Self.launchable.first { $0.name == "basic" && $0.variant == "x86_64-opcodes" })
        let (cache, path) = try Self.install(app)
        defer { try? FileManager.default.removeItem(atPath: cache) }
        var released: [Range<UInt64>] = []
        for _ in 0..<1000 {
            let launch = try FastPath.launch(closurePath: path, request: LaunchOptions(roots: [app.executable], arch: app.arch, root: app.root))
            #expect(launch.report.result != nil)
            released.append(launch.memory.regionBase..<(launch.memory.regionBase + launch.memory.regionSize))
            launch.memory.release()
        }
        #expect(try MappingAudit.leftovers(released).isEmpty)
    }
}
