import ClosureBuild
import Dyld2
import Dyld3
import Foundation
import ClosureCache
import LaunchComparison
import LoaderCore
import StubRoot
import Testing
import TestSupport
import ClosureFormat
import LaunchPlan

/// A dylib given with a host is loaded into it as `dlopen` loads it (`LaunchRoots`): the
/// hosted-module fixture's `libModule.dylib` (`-undefined dynamic_lookup`, so every import
/// of the host's API is a flat-namespace lookup, as in Rust-built Python extension modules)
/// launched with `--host hosted-module`. Its initializer registers a value computed through
/// those lookups with the host; the manifest's result (checked against the ELF twin by
/// `tools/build-fixtures --verify-expected`) is that value, which the host's `main` returns
/// in an ordinary launch of the app.
@Suite(.bounded) struct HostedDylibTests {
    static let apps = (try? FixtureApp.all().filter { $0.name == "hosted-module" }) ?? []

    static func module(_ app: FixtureApp) -> String { app.bundle + "/Frameworks/libModule.dylib" }

    /// The 32-bit value of the host's exported `_host_module_state` in a launch's memory.
    static func registeredState(_ launch: Launch, host: String, arch: String) throws -> Int32 {
        let exports = try #require(try ImageFile.load(path: host, arch: arch).image.exportTrie()).allSymbols()
        let state = try #require(exports.first { $0.name == "_host_module_state" })
        let word = try launch.memory.load(image: 0, vmOffset: try #require(state.imageOffset))
        return Int32(bitPattern: UInt32(truncatingIfNeeded: word))
    }

    @Test func everyVariantIsBuilt() {
        #expect(Self.apps.count == FixtureApp.variants.count, "run tools/build-fixtures (make fixtures)")
    }

    @Test(arguments: apps)
    func theDylibGoesAfterTheHostAndItsFlatLookupsFindTheHost(_ app: FixtureApp) throws {
        let module = Self.module(app)
        let roots = try LaunchRoots.roots(for: module, fileType: .dylib, root: app.root, host: app.executable)
        #expect(roots == [app.executable, module])
        let launch = try SlowPath.launch(LaunchOptions(roots: roots, arch: app.arch, root: app.root, recordFixups: true))
        defer { launch.memory.release() }
        #expect(launch.report.images.prefix(2) == [app.executable, module])
        // Every bind of the module to the host's API goes to image 0, the host.
        let hostBinds = (launch.fixups?[1] ?? []).filter { if case .bind(.image(0, _), _) = $0.kind { true } else { false } }
        #expect(hostBinds.count >= 3, "\(app): \(launch.fixups?[1] ?? [])")
        guard case let .result(expected, initOrder) = app.expectation else {
            Issue.record("\(app): the manifest expects no result")
            return
        }
        if let initOrder { #expect(launch.report.initializers.map(app.imageName) == initOrder) }
        if app.arch == CodeRunner.hostArchitecture {
            #expect(launch.report.timings[.initializers] != nil, "\(app): \(launch.report.notRun?.description ?? "")")
            #expect(try Self.registeredState(launch, host: app.executable, arch: app.arch) == expected)
            #expect(launch.report.notRun?.description.contains("no LC_MAIN") == true)
        } else {
            #expect(try Self.registeredState(launch, host: app.executable, arch: app.arch) == 0)
        }
    }

    @Test(arguments: apps)
    func withoutItsHostTheDylibsFlatLookupsFindNothing(_ app: FixtureApp) throws {
        #expect(try LaunchRoots.roots(for: Self.module(app), fileType: .dylib, root: app.root, host: nil) == [Self.module(app)])
        let error = #expect(throws: LoadError.self) {
            try SlowPath.launch(LaunchOptions(roots: [Self.module(app)], arch: app.arch, root: app.root, run: false)).memory.release()
        }
        guard case let .missingSymbol(symbol, importedBy, expectedIn)? = error else {
            Issue.record("\(app): \(String(describing: error))")
            return
        }
        #expect(symbol.hasPrefix("_host_") && importedBy == Self.module(app) && expectedIn.contains("flat namespace"), "\(error!)")
    }

    @Test(arguments: apps)
    func theClosureRecordsTheHostAndGivesTheSameResult(_ app: FixtureApp) throws {
        let roots = [app.executable, Self.module(app)]
        let closure = try ClosureBuilder.build(roots: roots, arch: app.arch, root: app.root)
        #expect(closure.binding.host == ClosureBinding.resolved(app.executable))
        #expect(closure.binding.app == ClosureBinding.resolved(Self.module(app)))
        let comparison = try LaunchComparison.run(
            options: LaunchOptions(roots: roots, arch: app.arch, root: app.root), closure: closure, closurePath: "(built in memory)")
        #expect(comparison.differences.isEmpty, "\(app): \(comparison.differences)")

        let cache = FileManager.default.temporaryDirectory.appendingPathComponent("dyld3-hosted-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: cache) }
        let store = ClosureCache(directory: cache)
        try store.prepareForWriting()
        let path = store.closurePath(forApp: Self.module(app), arch: app.arch)
        try ClosureFile.write(closure, to: path)
        let launch = try FastPath.launch(closurePath: path, request: LaunchOptions(roots: roots, arch: app.arch, root: app.root))
        defer { launch.memory.release() }
        guard case let .result(expected, _) = app.expectation else { return }
        #expect(try Self.registeredState(launch, host: app.executable, arch: app.arch) == (app.arch == CodeRunner.hostArchitecture ? expected : 0))
        // Launched without its host, the closure is refused for the host it was built for.
        let refusal = #expect(throws: ClosureError.self) {
            try FastPath.launch(closurePath: path, request: LaunchOptions(roots: [Self.module(app)], arch: app.arch, root: app.root)).memory.release()
        }
        guard case let .mismatch(_, field, _, _)? = refusal else {
            Issue.record("\(app): \(String(describing: refusal))")
            return
        }
        #expect(field == .host)
    }

    /// With a stub root made for the module alone, its `bin/host` stands for the host: it
    /// exports the module's flat imports, the dylib loads into it, and nothing runs.
    @Test(arguments: apps.filter { $0.variant.hasSuffix("chained") })
    func theStubRootsHostTakesTheHostsPlace(_ app: FixtureApp) async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("dyld3-hosted-root-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let plan = try StubRootPlan(binaries: [Self.module(app)], arches: [app.arch], root: root)
        #expect(plan.unresolved.isEmpty, "\(plan.unresolved)")
        try await plan.write()
        let roots = try LaunchRoots.roots(for: Self.module(app), fileType: .dylib, root: root, host: nil)
        #expect(roots == [StubRootPlan.hostPath(root: root), Self.module(app)])

        let closure = try ClosureBuilder.build(roots: roots, arch: app.arch, root: root)
        #expect(closure.binding.host == ClosureBinding.resolved(StubRootPlan.hostPath(root: root)))
        let comparison = try LaunchComparison.run(options: LaunchOptions(roots: roots, arch: app.arch, root: root), closure: closure, closurePath: "(built in memory)")
        #expect(comparison.differences.isEmpty, "\(app): \(comparison.differences)")
        #expect(comparison.dyld2Result == nil && comparison.dyld3Result == nil)
        #expect(comparison.notRun?.description.contains(StubRootPlan.hostPath(root: root) + " is a stub from a stub root") == true,
                "\(comparison.notRun?.description ?? "nil")")

        let launch = try SlowPath.launch(LaunchOptions(roots: roots, arch: app.arch, root: root, recordFixups: true))
        defer { launch.memory.release() }
        #expect(launch.report.initializers.map { $0 == Self.module(app) } == [true], "the module has the one initializer")
        #expect(launch.report.timings[.initializers] == nil, "no initializer ran")
        #expect(!launch.report.ran)
        let hostBinds = (launch.fixups?[1] ?? []).filter { if case .bind(.image(0, _), _) = $0.kind { true } else { false } }
        #expect(hostBinds.count >= 3)
    }

    /// The CLI takes the same route: `--host` for a dylib in launch, install and compare.
    @Test(arguments: apps.filter { $0.arch == CodeRunner.hostArchitecture })
    func theCommandsLoadADylibIntoItsHost(_ app: FixtureApp) async throws {
        let cache = FileManager.default.temporaryDirectory.appendingPathComponent("dyld3-hosted-cli-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: cache) }
        let common = ["--root", app.root, "--host", app.executable, "--cache", cache]
        let compare = try await Dyld3Binary.run(["compare", Self.module(app)] + common)
        #expect(compare.status == 0, "\(compare.stdout)\(compare.stderr)")
        #expect(compare.stdout.contains("identical: 3 images"), "\(compare.stdout)")
        let install = try await Dyld3Binary.run(["install", Self.module(app)] + common)
        #expect(install.status == 0, "\(install.stderr)")
        let launch = try await Dyld3Binary.run(["launch", Self.module(app), "--mode", "dyld3", "--json"] + common)
        #expect(launch.status == 0, "\(launch.stderr)")
        let report = try #require(launch.json)
        #expect(report["images"] as? [String] == [app.executable, Self.module(app), app.root + "/usr/lib/libSystem.B.dylib"])
        #expect(report["initializers"] as? [String] == [Self.module(app)])
        #expect(report["timings_ns"].flatMap { ($0 as? [String: Any])?["initializers"] } != nil, "the module's initializer ran")
        let alone = try await Dyld3Binary.run(["launch", Self.module(app), "--root", app.root, "--cache", cache])
        #expect(alone.status == 1)
        let failure = alone.stderr.split(separator: "\n").last ?? ""
        #expect(failure.hasPrefix("dyld3: _host_") && failure.contains(": symbol not found (referenced from "), "\(alone.stderr)")
    }
}
