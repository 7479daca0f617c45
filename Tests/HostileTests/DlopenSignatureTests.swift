import ClosureBuild
import ClosureFormat
import Dyld2
import Dyld3
import Foundation
import LaunchPlan
import LoaderCore
import MachOReader
import TestSupport
import Testing

/// The launch's page checks cover the images `dlopen` adds. The `dlopen` app's plugin is
/// changed in a byte of padding (after its load commands, before its first section) through a
/// shared mapping, which leaves its status as install recorded it: the identity check cannot
/// see it and the plugin runs the same, but its page 0 no longer matches its code signature.
@Suite(.serialized, .bounded) struct DlopenSignatureTests {
    @Test(arguments: FixtureApp.variants.filter { $0.hasPrefix(CodeRunner.hostArchitecture) })
    func aChangedPluginIsRefusedByEveryPageCheck(variant: String) throws {
        let original = try FixtureApp.named("dlopen", variant)
        guard case let .result(expected, _) = original.expectation else { Issue.record("the dlopen app must launch"); return }
        let app = try original.scratchCopy()
        defer { try? FileManager.default.removeItem(at: app.directory) }
        let cache = try Scratch.directory("dlopen-signature")
        defer { Scratch.remove(cache) }
        let plugin = app.bundle + "/PlugIns/Plugin.bundle/Plugin"
        let image = try MachOImage(parsing: ByteView(try Corpus.bytes(plugin)))
        let padding = 32 + Int(image.header.commandsSize) + 8
        let firstSection = image.sections.map { Int($0.fileOffset) }.filter { $0 > 0 }.min() ?? 0
        try #require(padding < firstSection, "no padding byte at 0x\(String(padding, radix: 16))")
        // The page written once before install (its times change then), then changed after
        // it: the status install recorded stays. The closure is dated an hour ahead so that the
        // racy rule (an image changed within seconds of its closure is hashed) stays out of it.
        let mapping = try UnsafeSharedMapping(path: plugin)
        mapping[padding] = mapping[padding]
        let closurePath = try app.install(into: cache)
        #expect(try ClosureFile.read(closurePath).dlopens.count == 1)
        var ahead = [timespec(tv_sec: time(nil), tv_nsec: 0), timespec(tv_sec: time(nil) + 3600, tv_nsec: 0)]
        try #require(utimensat(AT_FDCWD, closurePath, &ahead, 0) == 0)
        var before = stat(), after = stat()
        try #require(stat(plugin, &before) == 0)
        mapping[padding] ^= 0x5a
        try #require(stat(plugin, &after) == 0)
        try #require(before.st_mtim.tv_nsec == after.st_mtim.tv_nsec && before.st_ctim.tv_nsec == after.st_ctim.tv_nsec
                     && before.st_mtim.tv_sec == after.st_mtim.tv_sec && before.st_ctim.tv_sec == after.st_ctim.tv_sec,
                     "the file system updated the plugin's times on a write through a dirty shared page")

        func launch(_ change: (inout LaunchOptions) -> Void, _ configuration: LaunchConfiguration = LaunchConfiguration()) throws -> LaunchReport {
            var request = LaunchOptions(roots: [app.executable], arch: app.arch, root: app.root)
            change(&request)
            let launch = try FastPath.launch(closurePath: closurePath, request: request, configuration: configuration)
            defer { launch.memory.release() }
            return launch.report
        }
        func pluginLoaded(_ report: LaunchReport) -> Bool { report.dynamicLoads.contains { !$0.loaded.isEmpty } }
        // Unchecked, the change is invisible: the plugin loads and the result is the model's.
        let unchecked = try launch { _ in }
        #expect(unchecked.result == expected && pluginLoaded(unchecked), "\(String(describing: unchecked.result)) \(unchecked.dynamicLoads)")
        // Each page check refuses it: the dlopen fails (main folds that into its result).
        for (name, change) in [("--verify-pages", { (request: inout LaunchOptions) in request.verifyPages = true }),
                               ("page-in", { (request: inout LaunchOptions) in request.fixups = .pageIn })] {
            let checked = try launch(change)
            #expect(checked.result != expected && !pluginLoaded(checked), "\(name)")
        }
        // `--hash-images` finds the content changed; a dlopen closure built now verifies the
        // signature whole, as dyld2's dlopen does: refused both ways.
        let hashed = try launch({ _ in }, LaunchConfiguration(alwaysHashContent: true, dlopenClosures: DlopenClosureBuilder.resolve))
        #expect(hashed.result != expected && !pluginLoaded(hashed))
        let slow = try SlowPath.launch(LaunchOptions(roots: [app.executable], arch: app.arch, root: app.root))
        defer { slow.memory.release() }
        #expect(slow.report.result != expected && slow.report.dynamicLoads.allSatisfy { $0.loaded.isEmpty })
    }
}
