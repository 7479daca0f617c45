import ClosureBuild
import ClosureFormat
import Dyld2
import Dyld3
import Foundation
import LaunchPlan
import LaunchComparison
import LoaderCore
import Synchronization
import TestSupport
import Testing

/// Thread-local variables (docs/dyld-rules.md, rule 23), beyond what the tlv fixture's run
/// proves through every launch path: which descriptors are set up (against llvm-objdump's
/// view of the images), and keys that come back when a launch is released.
@Suite(.bounded) struct ThreadLocalTests {
    /// The digest counts the words the launch points into the loader itself (each descriptor's
    /// thunk, the host services table) as the loader's pointer: at one slide, launches in two
    /// processes, whose loaders are mapped at different addresses, give one digest, both ways.
    @Test func theDigestIsTheSameInEveryProcessAtOneSlide() async throws {
        let app = try FixtureApp.named("tlv", "\(CodeRunner.hostArchitecture)-chained")
        let cache = try Scratch.directory("dlopen")
        defer { try? FileManager.default.removeItem(atPath: cache) }
        _ = try app.install(into: cache)
        var digests: [String] = []
        for mode in ["dyld2", "dyld3", "dyld2", "dyld3"] {
            let launch = try await Dyld3Binary.run(["launch", "--mode", mode, "--root", app.root, "--cache", cache, "--slide", "0x10000000",
                                                    "--json", app.bundle], limitSeconds: 60)
            let report = try #require(try JSONSerialization.jsonObject(with: Data(launch.stdout.utf8)) as? [String: Any], "\(launch.stderr)")
            #expect(report["mode"] as? String == mode && report["slide"] as? Int == 0x1000_0000, "\(report)")
            digests.append(try #require(report["digest"] as? String))
        }
        #expect(Set(digests).count == 1, "\(digests)")
    }

    /// The closure sets up every descriptor of each image's `__thread_vars` (all bound to
    /// `__tlv_bootstrap`), with the template spanning `__thread_data` and `__thread_bss`, as
    /// llvm-objdump-19's section table gives them.
    @Test(arguments: FixtureApp.variants)
    func setupsCoverTheSectionsObjdumpShows(variant: String) async throws {
        let app = try FixtureApp.named("tlv", variant)
        let closure = try ClosureBuilder.build(roots: [app.executable], arch: app.arch, root: app.root)
        #expect(closure.threadLocals.setups.map(\.image) == [0, 2], "\(closure.threadLocals.setups)")
        for setup in closure.threadLocals.setups {
            let image = closure.images[setup.image]
            let table = try await Oracle.objdump(["--section-headers", image.path])
            func section(_ name: String) -> (address: UInt64, size: UInt64)? {
                guard let line = table.split(separator: "\n").first(where: { $0.split(separator: " ").dropFirst().first == Substring(name) }) else { return nil }
                let fields = line.split(separator: " ")
                return (UInt64(fields[3], radix: 16)! - image.plan.preferredBase, UInt64(fields[2], radix: 16)!)
            }
            let vars = try #require(section("__thread_vars"), "\(image.path)")
            #expect(setup.descriptors == stride(from: vars.address, to: vars.address + vars.size, by: 24).map { $0 })
            let data = section("__thread_data"), bss = section("__thread_bss")
            let start = [data?.address, bss?.address].compactMap { $0 }.min()!
            let end = [data.map { $0.address + $0.size }, bss.map { $0.address + $0.size }].compactMap { $0 }.max()!
            #expect(setup.templateOffset == start && setup.totalSize == end - start)
            #expect(setup.initialSize == (data.map { $0.address + $0.size - start } ?? 0))
        }
    }

    /// Keys are released with their launch and reused: 600 launches of a two-image
    /// thread-local app (1,200 keys, more than the 1,024 a process holds at once) all set
    /// their descriptors up, each with the key its launch made for the image.
    @Test func keysComeBackWhenALaunchIsReleased() throws {
        let app = try FixtureApp.named("tlv", "x86_64-chained")
        let setup = try #require(try ClosureBuilder.build(roots: [app.executable], arch: app.arch, root: app.root).threadLocals.setups.first)
        for _ in 0..<600 {
            let launch = try SlowPath.launch(LaunchOptions(roots: [app.executable], arch: app.arch, root: app.root, run: false))
            defer { launch.memory.release() }
            let key = try launch.memory.load(image: setup.image, vmOffset: setup.descriptors[0] + 8)
            #expect(launch.memory.threadLocalKeyOfImage[setup.image].map(UInt64.init) == key)
        }
    }

    /// Keys are the process's: while other launches take and release keys, dyld2's and
    /// dyld3's launches of one comparison get different numbers, and `compare` still finds
    /// their memory identical (each descriptor holds its launch's key for its image) and
    /// the same result.
    @Test func compareMatchesKeysByImageWhileOtherLaunchesTakeKeys() throws {
        let app = try FixtureApp.named("tlv", "x86_64-chained")
        let closure = try ClosureBuilder.build(roots: [app.executable], arch: app.arch, root: app.root)
        guard case let .result(expected, _) = app.expectation else {
            Issue.record("tlv [\(app.variant)] expects no result")
            return
        }
        let stop = Mutex(false)
        let churn = Thread {
            while !stop.withLock({ $0 }) {
                guard let launch = try? SlowPath.launch(LaunchOptions(roots: [app.executable], arch: app.arch, root: app.root, run: false)) else { continue }
                launch.memory.release()
            }
        }
        churn.start()
        defer { stop.withLock { $0 = true } }
        for _ in 0..<40 {
            let comparison = try LaunchComparison.run(options: LaunchOptions(roots: [app.executable], arch: app.arch, root: app.root),
                                                      closure: closure, closurePath: "(built in memory)")
            #expect(comparison.differences.isEmpty, "\(comparison.differences.prefix(4))")
            #expect(comparison.dyld3Result == expected && comparison.dyld2Result == expected)
        }
    }

    /// `inspect --thread-locals` row for row against llvm-objdump-19: one row per
    /// `__thread_vars` descriptor, named as `--syms` names the address, its thunk bound to
    /// `__tlv_bootstrap` as `--dyld-info` (chained) or `--bind` (opcodes) shows, and its
    /// offset that of the variable's `NAME$tlv$init` symbol in the template.
    @Test(arguments: FixtureApp.variants)
    func inspectShowsTheDescriptorsObjdumpShows(variant: String) async throws {
        let app = try FixtureApp.named("tlv", variant)
        for path in [app.executable, app.bundle + "/Frameworks/Counter.framework/Counter"] {
            let inspected = try await Dyld3Binary.run(["inspect", "--thread-locals", "--json", path], limitSeconds: 60)
            let slice = (inspected.json?["slices"] as? [[String: Any]])?.first
            let rows = try #require(slice?["thread_locals"] as? [[String: Any]], "\(inspected.stdout)")
            let symbols = try await Oracle.objdump(["--syms", path]).split(separator: "\n").map { $0.split(separator: " ") }
            func address(of name: String) -> UInt64? {
                symbols.first { $0.last.map(String.init) == name }.flatMap { UInt64($0[0], radix: 16) }
            }
            let vars = symbols.filter { $0.contains("__DATA,__thread_vars") }
            let fixups = try await Oracle.objdump([app.variant.hasSuffix("chained") ? "--dyld-info" : "--bind", path])
            let templateStart = symbols.filter { $0.contains("__DATA,__thread_data") || $0.contains("__DATA,__thread_bss") }
                .compactMap { UInt64($0[0], radix: 16) }.min()
            #expect(rows.count == vars.count && !rows.isEmpty, "\(path): \(rows.count) rows, objdump \(vars.count) descriptors")
            for row in rows {
                let name = try #require(row["variable"] as? String, "\(row)")
                let at = try #require((row["address"] as? NSNumber)?.uint64Value)
                #expect(address(of: name) == at, "\(name)")
                let bound = fixups.split(separator: "\n").first { line in
                    line.split(separator: " ").contains { UInt64($0.dropFirst(2), radix: 16) == at && $0.hasPrefix("0x") }
                }
                #expect(bound?.hasSuffix("__tlv_bootstrap") == true && (row["thunk"] as? String)?.hasPrefix("__tlv_bootstrap") == true, "\(name): \(bound ?? "no fixup")")
                let initial = try #require(address(of: name + "$tlv$init"), "\(name)$tlv$init")
                #expect((row["offset"] as? NSNumber)?.uint64Value == initial - (templateStart ?? 0), "\(name)")
            }
        }
    }
}
