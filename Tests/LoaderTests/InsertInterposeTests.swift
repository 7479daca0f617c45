import ClosureFormat
import Dyld2
import Foundation
import LaunchPlan
import LoaderCore
import TestSupport
import Testing

/// Inserted libraries and interposing, as dyld does them (docs/dyld-rules.md). The
/// `insert` and `interpose` fixture apps' expected results come from their ELF twins (run
/// with the inserted library preloaded) and the fixture builder's dyld model; the tuples'
/// targets from llvm-objdump-19's symbol tables.
@Suite(.bounded) struct InsertInterposeTests {
    /// The `insert` app's launch with its inserted library, as its manifest says it must end.
    struct InsertedExpectation {
        let result: Int32
        let initOrder: [String]
    }

    static func insertedExpectation(_ app: FixtureApp) throws -> InsertedExpectation {
        let manifest = try Data(contentsOf: URL(fileURLWithPath: app.bundle + "/manifest.json"))
        let object = try #require(try JSONSerialization.jsonObject(with: manifest) as? [String: Any])
        let expect = try #require(object["expectInserted"] as? [String: Any])
        return InsertedExpectation(result: try #require(expect["result"] as? NSNumber).int32Value,
                                   initOrder: try #require(expect["initOrder"] as? [String]))
    }

    static func json(_ result: Dyld3Binary.Result) -> [String: Any] { result.json ?? [:] }

    /// With `--insert`: dyld2 and dyld3 (from a closure installed with it) return the
    /// inserted launch's result, run initializers in the model's order, load the library
    /// right after the executable, and `compare` finds the same memory. Without it, the
    /// closure built with it is refused by `--mode dyld3` and skipped by `auto`, which then
    /// returns the plain launch's result.
    @Test(arguments: FixtureApp.variants)
    func insertedLibraryLoadsFirstAndInterposes(variant: String) async throws {
        let app = try FixtureApp.named("insert", variant)
        let expected = try Self.insertedExpectation(app)
        let library = app.bundle + "/Frameworks/libInsert.dylib"
        let cache = try Scratch.directory("insert")
        defer { try? FileManager.default.removeItem(atPath: cache) }
        let common = ["--root", app.root, "--cache", cache, "--json"]
        let runs = app.arch == CodeRunner.hostArchitecture

        let dyld2 = try await Dyld3Binary.run(["launch", app.bundle, "--mode", "dyld2", "--insert", library] + common, limitSeconds: 60)
        #expect(dyld2.status == 0, "\(dyld2.stderr)")
        let images = Self.json(dyld2)["images"] as? [String] ?? []
        #expect(images.count > 2 && images[1] == library, "load order \(images)")
        let install = try await Dyld3Binary.run(["install", app.bundle, "--insert", library] + common, limitSeconds: 60)
        #expect(install.status == 0, "\(install.stderr)")
        let dyld3 = try await Dyld3Binary.run(["launch", app.bundle, "--mode", "dyld3", "--insert", library] + common, limitSeconds: 60)
        #expect(dyld3.status == 0, "\(dyld3.stderr)")
        for run in [dyld2, dyld3] {
            let order = (Self.json(run)["initializers"] as? [String] ?? []).map(app.imageName)
            #expect(order == expected.initOrder, "\(Self.json(run)["mode"] ?? "?"): \(order)")
            if runs { #expect((Self.json(run)["result"] as? NSNumber)?.int32Value == expected.result, "\(run.stdout)") }
        }
        let compare = try await Dyld3Binary.run(["compare", app.bundle, "--insert", library] + common, limitSeconds: 60)
        #expect(compare.status == 0 && Self.json(compare)["identical"] as? Bool == true, "\(compare.stdout) \(compare.stderr)")

        let refused = try await Dyld3Binary.run(["launch", app.bundle, "--mode", "dyld3"] + common, limitSeconds: 60)
        #expect(refused.status == 1 && refused.stderr.contains("built for other inserted libraries"), "\(refused.stderr)")
        let auto = try await Dyld3Binary.run(["launch", app.bundle, "--mode", "auto"] + common, limitSeconds: 60)
        #expect((Self.json(auto)["fallback_reason"] as? String)?.contains("inserted") == true, "\(auto.stdout)")
        if runs, case let .result(plain, _) = app.expectation {
            #expect((Self.json(auto)["result"] as? NSNumber)?.int32Value == plain, "\(auto.stdout)")
        }
    }

    /// The `interpose` app's one tuple, as the resolver reads it: the replacement is
    /// libInterpose's `_my_compute`, the replacee Lib's `_compute`, at the addresses
    /// llvm-objdump-19's symbol tables give; every other image's bind to `_compute` goes to
    /// the replacement, libInterpose's own to the original.
    @Test(arguments: FixtureApp.variants)
    func interposingTupleNamesTheSymbolsObjdumpShows(variant: String) async throws {
        let app = try FixtureApp.named("interpose", variant)
        let graph = try DependencyGraph(roots: [app.executable], arch: app.arch, root: app.root)
        let plans = try graph.nodes.map { try ImagePlan(image: $0.image, path: $0.path, sliceOffset: $0.file.sliceOffset) }
        let resolver = try FixupResolver(graph: graph, plans: plans)
        let interposer = try #require(graph.nodes.firstIndex { $0.path.hasSuffix("/libInterpose.dylib") })
        let lib = try #require(graph.nodes.firstIndex { $0.path.hasSuffix("/Lib.framework/Lib") })

        func symbolOffset(_ name: String, in index: Int) async throws -> UInt64 {
            let table = try await Oracle.objdump(["--syms", graph.nodes[index].path])
            let line = try #require(table.split(separator: "\n").first { $0.hasSuffix(" " + name) }, "\(name) in \(graph.nodes[index].path)")
            let address = try #require(UInt64(line.split(separator: " ")[0], radix: 16))
            return address - plans[index].preferredBase
        }
        let replacement = BindTarget.image(interposer, offset: try await symbolOffset("_my_compute", in: interposer))
        let replacee = BindTarget.image(lib, offset: try await symbolOffset("_compute", in: lib))
        #expect(resolver.interposing.tuples == [Interposing.Tuple(image: interposer, replacement: replacement, replacee: replacee)])
        for index in graph.nodes.indices {
            #expect(resolver.interposing.apply(replacee, for: index) == (index == interposer ? replacee : replacement), "image \(index)")
        }
    }

    /// `inspect --interpose` against llvm-objdump-19: the tuple's replacement is the address
    /// `--syms` gives `_my_compute`, its replacee the symbol the fixup tables bind 8 bytes on.
    @Test(arguments: FixtureApp.variants)
    func inspectShowsTheTupleObjdumpShows(variant: String) async throws {
        let app = try FixtureApp.named("interpose", variant)
        let path = app.bundle + "/Frameworks/libInterpose.dylib"
        let inspected = try await Dyld3Binary.run(["inspect", "--interpose", "--json", path], limitSeconds: 60)
        let slice = (inspected.json?["slices"] as? [[String: Any]])?.first
        let tuples = try #require(slice?["interpose"] as? [[String: Any]], "\(inspected.stdout)")
        let symbols = try await Oracle.objdump(["--syms", path]).split(separator: "\n").map { $0.split(separator: " ") }
        let replacement = try #require(symbols.first { $0.last == "_my_compute" }.flatMap { UInt64($0[0], radix: 16) })
        let section = try #require(symbols.first { $0.contains("__DATA,__interpose") }.flatMap { UInt64($0[0], radix: 16) })
        let fixups = try await Oracle.objdump([variant.hasSuffix("chained") ? "--dyld-info" : "--bind", path])
        let replaceeLine = fixups.split(separator: "\n").first { line in
            line.split(separator: " ").contains { $0.hasPrefix("0x") && UInt64($0.dropFirst(2), radix: 16) == section + 8 }
        }
        #expect(tuples.count == 1 && (tuples.first?["address"] as? NSNumber)?.uint64Value == section, "\(tuples)")
        #expect(tuples.first?["replacement"] as? String == "0x\(String(replacement, radix: 16)) _my_compute", "\(tuples)")
        #expect(replaceeLine?.hasSuffix("_compute") == true && (tuples.first?["replacee"] as? String)?.hasPrefix("_compute (Lib)") == true,
                "\(replaceeLine ?? "no fixup") \(tuples)")
    }

    /// Interposing is applied where dyld applies it and nowhere else: a dylib loaded into a
    /// host (as dlopen loads it) registers no tuples, and `--insert` into such a launch is
    /// refused with one line naming the image.
    @Test func insertIntoAHostLaunchIsRefused() async throws {
        let app = try FixtureApp.named("insert", "x86_64-chained")
        let library = app.bundle + "/Frameworks/libInsert.dylib"
        let other = app.bundle + "/Frameworks/Other.framework/Other"
        let run = try await Dyld3Binary.run(["launch", other, "--host", app.executable, "--root", app.root, "--mode", "dyld2",
                                             "--insert", library], limitSeconds: 60)
        #expect(run.status == 1 && run.stderr.contains("libraries can be inserted only into a launch of an executable"), "\(run.stderr)")
        #expect(run.stderr.split(separator: "\n").count == 1, "\(run.stderr)")
    }
}
