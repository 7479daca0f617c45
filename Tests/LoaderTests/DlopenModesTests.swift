import ClosureBuild
import Dyld2
import Dyld3
import Foundation
import LaunchComparison
import LaunchPlan
import LoaderCore
import RuntimeServices
import TestSupport
import Testing

/// `dlopen`'s modes as dyld4's `dlopen_from` and `dlsym` implement them (docs/dyld-rules.md,
/// gap G10). The `dlopen-modes` fixture app's result comes from its ELF twin, whose harness
/// models the modes: main opens one bundle under RTLD_NOLOAD, RTLD_LOCAL and RTLD_FIRST and
/// under each path form, calls dlopen(NULL), and folds every answer into the result. Its
/// dlopens are also made here one by one against each path's loader (nothing runs).
@Suite(.bounded) struct DlopenModesTests {
    static let modes = "@executable_path/PlugIns/Modes.bundle/Modes"
    static let helper = "/usr/lib/libfixture_dlopen_modes.dylib"

    /// The first dlopen loads the bundle then its helper, the other four (other path forms of
    /// the two) load nothing; RTLD_NOLOAD before the load is no event at all.
    static func checkEvents(_ events: [DynamicLoadEvent], _ app: FixtureApp, via: String) throws {
        let dlopen = try #require(app.dlopen)
        #expect(events.map(\.requested) == [modes, "@rpath/Modes.bundle/Modes", "@loader_path/PlugIns/Modes.bundle/Modes", helper,
                                           "/usr/lib/../lib/libfixture_dlopen_modes.dylib"])
        #expect(events.first?.loaded.map(app.imageName) == ["Modes", "Helper"])
        #expect(events.first?.initialized.map(app.imageName) == dlopen.initOrder)
        #expect(events.dropFirst().allSatisfy { $0.loaded.isEmpty })
        #expect(events.allSatisfy { $0.via == via || $0.loaded.isEmpty })
    }

    @Test(arguments: DlopenTests.hostVariants)
    func dyld2FollowsEachMode(variant: String) throws {
        let app = try FixtureApp.named("dlopen-modes", variant)
        guard case let .result(expected, initOrder) = app.expectation else { Issue.record("the dlopen-modes app must launch"); return }
        let launch = try SlowPath.launch(LaunchOptions(roots: [app.executable], arch: app.arch, root: app.root))
        defer { launch.memory.release() }
        #expect(launch.report.result == expected)
        #expect(launch.report.initializers.map(app.imageName) == initOrder)
        try Self.checkEvents(launch.report.dynamicLoads, app, via: "dyld2")
    }

    /// dyld3 with the installed dlopen closure, and with one built at run time: the same result.
    @Test(arguments: DlopenTests.hostVariants)
    func dyld3FollowsEachMode(variant: String) throws {
        let app = try FixtureApp.named("dlopen-modes", variant)
        guard case let .result(expected, _) = app.expectation else { return }
        let cache = try Scratch.directory("dlopen-modes")
        defer { try? FileManager.default.removeItem(atPath: cache) }
        let request = LaunchOptions(roots: [app.executable], arch: app.arch, root: app.root)
        let installed = try FastPath.launch(closurePath: try app.install(into: cache), request: request)
        #expect(installed.report.result == expected)
        try Self.checkEvents(installed.report.dynamicLoads, app, via: "closure")
        installed.memory.release()
        let runtime = try FastPath.launch(closurePath: try app.install(into: cache, dlopenClosures: false), request: request,
                                          configuration: LaunchConfiguration(dlopenClosures: DlopenClosureBuilder.resolve))
        defer { runtime.memory.release() }
        #expect(runtime.report.result == expected)
        try Self.checkEvents(runtime.report.dynamicLoads, app, via: "runtime closure")
    }

    /// `compare` runs main both ways: the same memory, fixups and result.
    @Test(arguments: DlopenTests.hostVariants)
    func compareFindsBothPathsIdentical(variant: String) throws {
        let app = try FixtureApp.named("dlopen-modes", variant)
        guard case let .result(expected, _) = app.expectation else { return }
        let comparison = try LaunchComparison.run(
            options: LaunchOptions(roots: [app.executable], arch: app.arch, root: app.root), closure: try app.closure(),
            closurePath: "(built in memory)")
        #expect(comparison.differences.isEmpty, "\(comparison.differences)")
        #expect(comparison.dyld2Result == expected && comparison.dyld3Result == expected)
    }

    /// Each mode against each path's loader directly, the launch made without running code.
    @Test(arguments: DlopenTests.hostVariants)
    func eachLoaderAnswersEachMode(variant: String) throws {
        let app = try FixtureApp.named("dlopen-modes", variant)
        let cache = try Scratch.directory("dlopen-modes")
        defer { try? FileManager.default.removeItem(atPath: cache) }
        let request = LaunchOptions(roots: [app.executable], arch: app.arch, root: app.root, run: false)
        let slow = try SlowPath.launch(request)
        defer { slow.memory.release() }
        let fast = try FastPath.launch(closurePath: try app.install(into: cache), request: request)
        defer { fast.memory.release() }
        for launch in [slow, fast] {
            let loader = try #require(launch.memory.dynamicLoader?.loader)
            try Self.checkModes(loader)
        }
    }

    static func checkModes(_ loader: DynamicLoader) throws {
        let now: Int32 = 0x2, local: Int32 = 0x4, noLoad: Int32 = 0x10, first: Int32 = 0x100
        // RTLD_NOLOAD: nothing loaded yet, nothing loaded by it.
        #expect(throws: LoadError.self) { try loader.open(modes, mode: now | noLoad) }
        #expect(loader.loadedMemories.isEmpty && loader.events.isEmpty)
        // RTLD_LOCAL: the handle sees the bundle and its helper, RTLD_DEFAULT the helper only.
        let handle = try loader.open(modes, mode: now | local)
        #expect(handle & 1 == 0)
        let entry = try loader.symbol("modes_entry", handle: handle)
        let helperValue = try loader.symbol("modes_helper", handle: DynamicHandle.defaultSearch)
        #expect(throws: LoadError.self) { try loader.symbol("modes_entry", handle: DynamicHandle.defaultSearch) }
        #expect(try loader.symbol("modes_helper", handle: handle) == helperValue)
        // RTLD_FIRST under @rpath: the same image, its own handle, the image alone.
        let firstOnly = try loader.open("@rpath/Modes.bundle/Modes", mode: now | local | first)
        #expect(firstOnly == handle | 1)
        #expect(try loader.symbol("modes_entry", handle: firstOnly) == entry)
        #expect(throws: LoadError.self) { try loader.symbol("modes_helper", handle: firstOnly) }
        #expect(throws: LoadError.self) { try loader.symbol("modes_entry", handle: DynamicHandle.mainOnly) }
        // RTLD_NOLOAD once loaded, without RTLD_LOCAL: the handle, and the image made global.
        #expect(try loader.open("@loader_path/PlugIns/Modes.bundle/Modes", mode: noLoad) == handle)
        #expect(try loader.symbol("modes_entry", handle: DynamicHandle.defaultSearch) == entry)
        // The helper by two spellings of its absolute path: one handle, which does not search its loader.
        let helper = try loader.open(Self.helper, mode: noLoad)
        #expect(try loader.open("/usr/lib/../lib/libfixture_dlopen_modes.dylib", mode: now) == helper)
        #expect(throws: LoadError.self) { try loader.symbol("modes_entry", handle: helper) }
        #expect(loader.loadedMemories.count == 1)
        // dlclose: once per open, whichever handle of the image.
        for _ in 0..<3 { try loader.close(firstOnly) }
        #expect(throws: LoadError.self) { try loader.close(handle) }
    }
}
