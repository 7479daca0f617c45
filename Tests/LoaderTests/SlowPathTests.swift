import TestSupport
import Dyld2
import Foundation
import LoaderCore
import Testing
import LaunchPlan

/// The dyld2 slow path against the fixture apps' manifests, whose expected results were
/// computed without any Mach-O loader (ELF twins, first principles).
@Suite(.bounded) struct SlowPathTests {
    static let apps = (try? FixtureApp.all()) ?? []

    @Test func fixturesAreBuilt() throws {
        #expect(try FixtureApp.all().count == 76)
    }

    @Test(arguments: apps)
    func launchesAsItsManifestSays(_ app: FixtureApp) throws {
        let options = LaunchOptions(roots: [app.executable], arch: app.arch, root: app.root)
        switch app.expectation {
        case let .result(expected, initOrder):
            let launch = try SlowPath.launch(options)
            defer { launch.memory.release() }
            if app.arch == CodeRunner.hostArchitecture {
                #expect(launch.report.ran)
                #expect(launch.report.result == expected, "\(app)")
            } else {
                #expect(!launch.report.ran)
                #expect(launch.report.notRun?.description.contains("cannot run") == true)
            }
            if let initOrder {
                // Initializer order is computed for every arch; images without initializers are absent.
                #expect(launch.report.initializers.map(app.imageName) == initOrder, "\(app)")
            }
        case let .missingSymbol(symbol, image, library):
            #expect {
                _ = try SlowPath.launch(options)
            } throws: { error in
                guard case let .missingSymbol(gotSymbol, importedBy, expectedIn) = error as? LoadError else { return false }
                return gotSymbol == symbol && app.imageName(importedBy) == image && expectedIn.contains(library)
            }
        case let .missingDylib(image, installName):
            #expect {
                _ = try SlowPath.launch(options)
            } throws: { error in
                guard case let .missingDylib(gotName, neededBy, tried) = error as? LoadError else { return false }
                return gotName == installName && app.imageName(neededBy) == image && !tried.isEmpty
            }
        }
    }

    @Test func digestIsTheSameAtTwoSlides() throws {
        var digests: [UInt64] = []
        for app in Self.apps where app.name == "basic" || app.name == "paths" {
            let first = try SlowPath.launch(LaunchOptions(roots: [app.executable], arch: app.arch, root: app.root, slide: 0x2000_0000_0000, run: false))
            let firstDigest = try #require(first.report.digest)
            first.memory.release()
            let second = try SlowPath.launch(LaunchOptions(roots: [app.executable], arch: app.arch, root: app.root, slide: 0x3123_4560_0000, run: false))
            defer { second.memory.release() }
            #expect(second.report.slide != first.report.slide)
            #expect(second.report.digest == firstDigest, "\(app)")
            digests.append(firstDigest)
        }
        // Eight different apps and builds: a digest that ignored memory would repeat.
        #expect(digests.count == 8)
        #expect(Set(digests).count == digests.count)
    }

    @Test func missingDylibErrorListsEveryPathTried() throws {
        let app = try #require(Self.apps.first { $0.name == "missing-dylib" && $0.variant == "x86_64-chained" })
        let error = try #require(throws: LoadError.self) {
            _ = try SlowPath.launch(LaunchOptions(roots: [app.executable], arch: app.arch, root: app.root))
        }
        guard case let .missingDylib(_, _, tried) = error else {
            Issue.record("expected a missing dylib, got \(error)")
            return
        }
        // @executable_path/Frameworks from LC_RPATH, then the root's /usr/lib fallback.
        #expect(tried.contains(app.bundle + "/Frameworks/Gone.framework/Gone"))
        #expect(tried.contains(app.root + "/usr/lib/Gone"))
    }

    @Test func aThousandLaunchesLeaveNoMappings() throws {
        let app = try #require(Self.apps.first { $0.name == "basic" && $0.variant == "x86_64-chained" })
        let options = LaunchOptions(roots: [app.executable], arch: app.arch, root: app.root)
        var released: [Range<UInt64>] = []
        for _ in 0..<1000 {
            let launch = try SlowPath.launch(options)
            #expect(launch.report.result != nil)
            released.append(launch.memory.regionBase..<(launch.memory.regionBase + launch.memory.regionSize))
            launch.memory.release()
        }
        #expect(try MappingAudit.leftovers(released).isEmpty)
    }
}
