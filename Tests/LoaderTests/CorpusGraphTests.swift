import LaunchComparison
import ClosureBuild
import Dyld2
import Dyld3
import Foundation
import ClosureCache
import LoaderCore
import StubRoot
import Testing
import TestSupport
import ClosureFormat

/// Real Apple-built graphs from the corpus, loaded with generated stub roots: the slow
/// path writes exactly the fixups llvm-objdump-19 lists, the closure of the graph verifies,
/// and dyld2 and dyld3 leave identical memory. Nothing runs: the stubs hold no code, and a
/// launch that loaded one runs no initializer and no main (`LaunchTail.reasonNotToRun`).
@Suite(.serialized, .bounded) struct CorpusGraphTests {
    /// A graph: its root images and the arch (the stub host goes first for a bundle or dylib).
    struct Graph: CustomStringConvertible, Sendable {
        let name: String
        let binaries: [String]
        let arch: String
        var description: String { "\(name) [\(arch)]" }
    }

    static let kiwisolverExtension = Paths.corpus.path + "/fat_universal2/_cext.cpython-311-darwin.so"

    static let graphs: [Graph] = {
        let corpus = Paths.corpus.path
        return [
            Graph(name: "pillow _imaging", binaries: [corpus + "/graph_arm64_pillow/PIL/_imaging.cpython-311-darwin.so"], arch: "arm64"),
            Graph(name: "pillow _imagingft", binaries: [corpus + "/graph_arm64_pillow/PIL/_imagingft.cpython-311-darwin.so"], arch: "arm64"),
            Graph(name: "scipy gfortran chained", binaries: [corpus + "/chained_arm64/libgfortran.5.dylib"], arch: "arm64"),
            Graph(name: "scipy gfortran chained", binaries: [corpus + "/chained_x86_64/libgfortran.5.dylib"], arch: "x86_64"),
            Graph(name: "numpy gfortran opcodes", binaries: [corpus + "/opcodes_x86_64/libgfortran.5.dylib"], arch: "x86_64"),
            Graph(name: "kiwisolver _cext", binaries: [kiwisolverExtension], arch: "x86_64"),
            Graph(name: "kiwisolver _cext", binaries: [kiwisolverExtension], arch: "arm64"),
            Graph(name: "ninja", binaries: [corpus + "/fat_universal2/ninja"], arch: "arm64"),
            Graph(name: "cffi _cffi_backend iOS", binaries: [Paths.bundledCorpus.path + "/ios_arm64/_cffi_backend.cpython-313-iphoneos.so"], arch: "arm64"),
            // Objective-C: the root's libobjc is a runtime of ours, so the step runs (RealObjCTests).
            Graph(name: "pyobjc _objc", binaries: [Paths.bundledCorpus.path + "/objc_universal2/_objc.cpython-311-darwin.so"], arch: "x86_64"),
            Graph(name: "pyobjc _objc", binaries: [Paths.bundledCorpus.path + "/objc_universal2/_objc.cpython-311-darwin.so"], arch: "arm64"),
        ]
    }()

    /// Writes the stub root for `graph` and returns it with the launch roots (the stub host
    /// first for a bundle or dylib, as `dyld3` takes them: `LaunchRoots`).
    static func prepare(_ graph: Graph) async throws -> (root: String, roots: [String]) {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("dyld3-corpus-\(UUID().uuidString)").path
        let plan = try StubRootPlan(binaries: graph.binaries, arches: [graph.arch], root: root)
        #expect(plan.unresolved.isEmpty, "\(graph): \(plan.unresolved)")
        try await plan.write()
        let main = graph.binaries[0]
        let fileType = try ImageFile.load(path: main, arch: graph.arch).image.header.fileType
        return (root, try LaunchRoots.roots(for: main, fileType: fileType, root: root, host: nil))
    }

    /// dyld2's launch of the x86_64 kiwisolver extension in its stub root, handed to `body` with
    /// the options it was launched by, before its memory is released and the root removed.
    static func withKiwisolverLaunch(run: Bool, _ body: (Launch, LaunchOptions) throws -> Void) async throws {
        let graph = try #require(graphs.first { $0.name == "kiwisolver _cext" && $0.arch == "x86_64" })
        let (root, roots) = try await prepare(graph)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let options = LaunchOptions(roots: roots, arch: graph.arch, root: root, run: run)
        let launch = try SlowPath.launch(options)
        defer { launch.memory.release() }
        try body(launch, options)
    }

    @Test(arguments: graphs)
    func slowPathWritesExactlyTheListedFixups(_ graph: Graph) async throws {
        let (root, roots) = try await Self.prepare(graph)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let launch = try SlowPath.launch(LaunchOptions(roots: roots, arch: graph.arch, root: root, run: false, recordFixups: true))
        defer { launch.memory.release() }
        let compared = try await FixupLocationTests.compareWrittenWithListed(
            launch, arch: graph.arch, label: "\(graph)", skip: { $0.hasPrefix(root) })
        #expect(compared > 100)
        print("corpus: \(graph): \(launch.report.images.count) images, \(compared) fixup locations equal llvm-objdump-19's")
    }

    @Test(arguments: graphs)
    func closureVerifiesAndBothPathsAgree(_ graph: Graph) async throws {
        let (root, roots) = try await Self.prepare(graph)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let closure = try ClosureBuilder.build(roots: roots, arch: graph.arch, root: root)
        let path = root + "/graph." + ClosureCache.fileExtension
        try ClosureFile.write(closure, to: path)
        let reread = try ClosureFile.read(path)
        #expect(reread == closure)
        #expect(reread.staleImage(closurePath: path) == nil)
        let comparison = try LaunchComparison.run(
            options: LaunchOptions(roots: roots, arch: graph.arch, root: root, run: false), closure: closure, closurePath: path)
        #expect(comparison.differences.isEmpty, "\(graph): \(comparison.differences.prefix(5))")
        #expect(comparison.fixupsCompared > 100)
    }

    /// `compare --fixups page-in` on the real graphs at two random slides: every deferred
    /// page is faulted in by the comparison's reads and must hold dyld2's bytes.
    @Test(arguments: graphs)
    func pageInLaunchMatchesDyld2AtRandomSlides(_ graph: Graph) async throws {
        let (root, roots) = try await Self.prepare(graph)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let closure = try ClosureBuilder.build(roots: roots, arch: graph.arch, root: root)
        for _ in 0..<2 {
            let options = LaunchOptions(roots: roots, arch: graph.arch, root: root, slide: PageInTests.randomSlide(), run: false, fixups: .pageIn)
            let comparison = try LaunchComparison.run(options: options, closure: closure, closurePath: "(built in memory)")
            #expect(comparison.differences.isEmpty, "\(graph) slide 0x\(String(comparison.slide, radix: 16)): \(comparison.differences.prefix(5))")
            #expect(comparison.fixupsCompared > 100)
            PageInTests.expectPageInOrFallback(comparison.fixupsMode, comparison.pageInFallback?.description, "\(graph)")
            if PageInTests.unavailable == nil {
                #expect(comparison.pagesRegistered > 0 && comparison.pagesFilled == comparison.pagesRegistered, "\(graph)")
            }
        }
    }
}

extension CorpusGraphTests {
    /// The digest is slide-independent for every pointer, high byte or not: C++ type-name
    /// pointers in arm64 images carry bit 63 (`0x8000000000017dce`) above the address.
    @Test func digestIsSlideIndependentForHighBytePointers() async throws {
        let graph = try #require(Self.graphs.first { $0.name == "kiwisolver _cext" && $0.arch == "arm64" })
        let (root, roots) = try await Self.prepare(graph)
        defer { try? FileManager.default.removeItem(atPath: root) }
        var digests: Set<UInt64?> = []
        var highByteRebases = 0
        for slide: UInt64 in [0x1_0000_0000, 0x2345_6780_0000, 0x3fff_0000_0000] {
            let launch = try SlowPath.launch(LaunchOptions(roots: roots, arch: graph.arch, root: root, slide: slide, run: false, recordFixups: true))
            defer { launch.memory.release() }
            digests.insert(launch.report.digest)
            highByteRebases = (launch.fixups ?? []).joined().count { if case let .rebase(_, high8) = $0.kind { high8 != 0 } else { false } }
        }
        #expect(highByteRebases > 0, "the graph has no high-byte rebase: the test proves nothing")
        #expect(digests.count == 1, "\(digests.count) digests at 3 slides")
    }
}

extension CorpusGraphTests {
    /// A stub root's images hold no code: with code allowed to run, both paths map the graph,
    /// write its fixups (and set up its thread-local variables) and stop before the first
    /// initializer, naming the stub; `compare`
    /// (which used to run the initializers and crash on kiwisolver's x86_64 module) runs
    /// nothing and finds memory, fixups and initializer order identical.
    @Test(arguments: graphs)
    func stubRootGraphsRunNothingAndBothPathsStillAgree(_ graph: Graph) async throws {
        let (root, roots) = try await Self.prepare(graph)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let request = LaunchOptions(roots: roots, arch: graph.arch, root: root, run: true)
        let closure = try ClosureBuilder.build(roots: roots, arch: graph.arch, root: root)
        let comparison = try LaunchComparison.run(options: request, closure: closure, closurePath: "(built in memory)")
        #expect(comparison.differences.isEmpty, "\(graph): \(comparison.differences.prefix(5))")
        #expect(comparison.dyld2Result == nil && comparison.dyld3Result == nil)
        let reason = try #require(comparison.notRun?.description)
        let stub = try #require(reason.components(separatedBy: " is a stub from a stub root (it carries __DATA,__stub_root)").first)
        #expect(stub.hasPrefix(root + "/") && stub != reason, "\(graph): \(reason)")
        // An image with thread-local variables (as llvm-objdump reads its header) has them set
        // up, the same way by both paths (the comparison above covers the descriptors' words).
        let header = try await Oracle.objdump(["--private-header", "--arch=\(graph.arch)", graph.binaries[0]])
        if header.contains("MH_HAS_TLV_DESCRIPTORS") {
            #expect(closure.threadLocals.setups.contains { closure.images[$0.image].path.hasSuffix(graph.binaries[0].split(separator: "/").last.map(String.init) ?? "?") },
                    "\(graph): \(closure.threadLocals.setups)")
        }

        let slow = try SlowPath.launch(request)
        defer { slow.memory.release() }
        let fast = try FastPath.launch(closure, closurePath: "(built in memory)", request: request)
        defer { fast.memory.release() }
        for launched in [slow.report, fast.report] {
            #expect(launched.notRun?.description == reason)
            #expect(!launched.ran && launched.result == nil)
            #expect(launched.timings[.initializers] == nil, "\(graph): an initializer ran")
        }
        #expect(slow.report.initializers == fast.report.initializers)
    }

    /// The graph that crashed `compare` has initializers that would have run here: the test
    /// above proves something on this host.
    @Test func kiwisolverX86ModuleHasInitializersThatWouldRunHere() async throws {
        try await Self.withKiwisolverLaunch(run: true) { launch, _ in
            #expect(launch.report.initializers == [Self.kiwisolverExtension])
            #expect(CodeRunner.hostArchitecture != "x86_64" || launch.report.notRun?.description.contains("stub") == true)
        }
    }
}
