import Foundation
import LoaderCore
import MachOReader
import StubRoot
import Testing
import TestSupport

@Suite(.serialized, .bounded)
struct StubRootTests {
    static let pillow = [
        StubRootPaths.corpusFile("graph_arm64_pillow/PIL/_imaging.cpython-311-darwin.so"),
        StubRootPaths.corpusFile("graph_arm64_pillow/PIL/_imagingft.cpython-311-darwin.so"),
    ]

    /// Plans and writes a stub root for `binaries` into a fresh directory, then checks it
    /// against llvm-objdump and checks every graph, for every architecture, for unbound
    /// imports. Returns the plan and the checks.
    static func buildAndCheck(_ binaries: [String], arches: [String]?, label: String) async throws
        -> (plan: StubRootPlan, checks: [CompletenessCheck], comparisons: Int)
    {
        let root = try Scratch.directory(label)
        let plan = try StubRootPlan(binaries: binaries, arches: arches, root: root)
        try await plan.write()
        #expect(plan.unresolved.isEmpty, "\(plan.unresolved)")
        #expect(plan.missingDylibs.isEmpty, "\(plan.missingDylibs)")
        let comparisons = try await StubRootOracle.expectFilesMatchPlan(plan)
        var checks: [CompletenessCheck] = []
        for binary in binaries {
            for arch in try ImageFile.architectures(path: binary) where arches?.contains(arch) ?? true {
                let check = try CompletenessCheck(binary: binary, arch: arch, root: root)
                #expect(check.unresolved.isEmpty, "\(binary) \(arch): \(check.unresolved.prefix(10))")
                #expect(check.checkedImports > 0)
                try expectStubVersionsSatisfy(check.graph, stubs: Set(plan.stubs.map(\.path)))
                checks.append(check)
            }
        }
        return (plan, checks, comparisons)
    }

    /// Every load command naming a stub asks for versions its `LC_ID_DYLIB` provides.
    static func expectStubVersionsSatisfy(_ graph: DependencyGraph, stubs: Set<String>) throws {
        for node in graph.nodes {
            for (dependency, edge) in zip(node.image.dependencies, node.dependencies) {
                guard let target = edge.target, stubs.contains(graph.nodes[target].path) else { continue }
                let id = try #require(graph.nodes[target].image.id)
                #expect(id.currentVersion >= dependency.command.currentVersion, "\(dependency.installName)")
                #expect(id.compatibilityVersion >= dependency.command.compatibilityVersion, "\(dependency.installName)")
            }
        }
    }

    @Test func pillowGraphIsComplete() async throws {
        let directory = StubRootPaths.corpusFile("graph_arm64_pillow/PIL/.dylibs")
        let bundled = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        #expect(bundled.count == 18)
        // The two modules reach 12 of the bundled dylibs; the other 6 (libwebp, libavif,
        // lcms2, ...) serve modules the corpus leaves out, so they are roots of their own.
        let (plan, checks, comparisons) = try await Self.buildAndCheck(
            Self.pillow + bundled.map { directory + "/" + $0 }, arches: nil, label: "pillow")
        defer { try? FileManager.default.removeItem(atPath: plan.root) }
        #expect(comparisons > 0)
        #expect(plan.stubs.map(\.installName).contains("/usr/lib/libSystem.B.dylib"))
        #expect(plan.host.slices.map(\.arch) == ["arm64"])
        #expect(plan.hostSymbolCount > 0)
        let checked = Set(checks.flatMap(\.checkedImages).map { ($0 as NSString).lastPathComponent })
        for name in bundled + Self.pillow.map({ ($0 as NSString).lastPathComponent }) {
            #expect(checked.contains(name), "\(name) was not checked")
        }
        // The modules alone need a subset of that root.
        let modulesOnly = try StubRootPlan(binaries: Self.pillow, arches: nil, root: plan.root)
        #expect(modulesOnly.unresolved.isEmpty && modulesOnly.missingDylibs.isEmpty)
        #expect(modulesOnly.hostSymbolCount == plan.hostSymbolCount)
        for check in try Self.pillow.map({ try CompletenessCheck(binary: $0, arch: "arm64", root: plan.root) }) {
            #expect(check.unresolved.isEmpty && check.checkedImports > 0)
        }
    }

    @Test(arguments: ["chained_arm64", "chained_x86_64", "opcodes_x86_64"])
    func scipyGfortranGraphIsComplete(folder: String) async throws {
        let binary = StubRootPaths.corpusFile("\(folder)/libgfortran.5.dylib")
        let (plan, checks, comparisons) = try await Self.buildAndCheck([binary], arches: nil, label: folder)
        defer { try? FileManager.default.removeItem(atPath: plan.root) }
        #expect(comparisons > 0)
        #expect(plan.stubs.map(\.installName) == ["/usr/lib/libSystem.B.dylib"])
        // libgfortran, libquadmath and libgcc_s, besides the host.
        #expect(Set(checks.flatMap(\.checkedImages).map { ($0 as NSString).lastPathComponent })
            .isSuperset(of: ["libgfortran.5.dylib", "libquadmath.0.dylib", "libgcc_s.1.1.dylib"]))
    }

    @Test(arguments: [nil, ["x86_64"], ["arm64"]] as [[String]?])
    func fatUniversalGraphsAreComplete(arches: [String]?) async throws {
        let binaries = ["_cext.cpython-311-darwin.so", "ninja"].map { StubRootPaths.corpusFile("fat_universal2/\($0)") }
        let (plan, checks, comparisons) = try await Self.buildAndCheck(binaries, arches: arches, label: "fat")
        defer { try? FileManager.default.removeItem(atPath: plan.root) }
        #expect(comparisons > 0)
        #expect(checks.count == 2 * (arches?.count ?? 2))
        let expectedArches = arches ?? ["arm64", "x86_64"]
        for stub in plan.stubs { #expect(stub.slices.map(\.arch) == expectedArches, "\(stub.installName)") }
        #expect(Set(plan.stubs.map(\.installName)) == ["/usr/lib/libSystem.B.dylib", "/usr/lib/libc++.1.dylib"])
        // ninja coalesces typeinfo and operator new with libc++: weak definitions there.
        let libcxx = try #require(plan.stubs.first { $0.installName == "/usr/lib/libc++.1.dylib" })
        #expect(libcxx.slices.allSatisfy { $0.exports.contains(StubExport(name: "__ZTISt12length_error", isWeakDefinition: true)) })
    }

    /// pyobjc's Objective-C modules, both architectures: every import binds, and the stubs
    /// (class objects and the runtime's code beside the data) export exactly the plan's names.
    @Test func objcGraphsAreComplete() async throws {
        let (plan, checks, comparisons) = try await Self.buildAndCheck(
            ["objc_universal2/_objc.cpython-311-darwin.so", "objc_universal2/_Foundation.cpython-311-darwin.so"].map(StubRootPaths.bundledFile),
            arches: nil, label: "objc")
        defer { try? FileManager.default.removeItem(atPath: plan.root) }
        #expect(comparisons > 0)
        #expect(checks.count == 4)
        let runtime = try #require(plan.stubs.first { $0.installName == "/usr/lib/libobjc.A.dylib" })
        #expect(runtime.slices.map(\.arch) == ["arm64", "x86_64"])
        #expect(runtime.slices.allSatisfy { $0.exports.contains { $0.name == "_OBJC_CLASS_$_NSObject" } })
    }

    @Test func removedExportIsReportedUnresolved() async throws {
        let root = try Scratch.directory("removed")
        defer { try? FileManager.default.removeItem(atPath: root) }
        var plan = try StubRootPlan(binaries: Self.pillow, arches: nil, root: root)
        let index = try #require(plan.stubs.firstIndex { $0.installName == "/usr/lib/libSystem.B.dylib" })
        let removed = try #require(plan.stubs[index].slices[0].exports.first { $0.name == "_malloc" })
        plan.stubs[index].slices[0].exports.removeAll { $0 == removed }
        let hostRemoved = try #require(plan.host.slices[0].exports.first)
        plan.host.slices[0].exports.removeFirst()
        try await plan.write()
        var reported: [CompletenessCheck.Unresolved] = []
        for binary in Self.pillow {
            reported += try CompletenessCheck(binary: binary, arch: "arm64", root: root).unresolved
        }
        #expect(reported.contains { $0.symbol == "_malloc" && $0.libraryOrdinal > 0 })
        #expect(reported.contains { $0.symbol == hostRemoved.name && $0.libraryOrdinal == -2 })
        #expect(reported.allSatisfy { [removed.name, hostRemoved.name].contains($0.symbol) }, "\(reported)")
    }

    @Test func rerunAndOtherRootWriteIdenticalFiles() async throws {
        let first = try Scratch.directory("first"), second = try Scratch.directory("second")
        defer {
            try? FileManager.default.removeItem(atPath: first)
            try? FileManager.default.removeItem(atPath: second)
        }
        let plan = try StubRootPlan(binaries: Self.pillow, arches: nil, root: first)
        try await plan.write()
        let written = try StubRootPaths.files(under: first)
        let bytes = try written.map { try Data(contentsOf: URL(fileURLWithPath: first + "/" + $0)) }
        // The stubs now in the root are recognized as earlier stubs: the same plan again.
        let again = try StubRootPlan(binaries: Self.pillow, arches: nil, root: first)
        #expect(again == plan)
        try await again.write()
        try await StubRootPlan(binaries: Self.pillow, arches: nil, root: second).write()
        #expect(try StubRootPaths.files(under: first) == written)
        #expect(try StubRootPaths.files(under: second) == written)
        for (relative, original) in zip(written, bytes) {
            #expect(try Data(contentsOf: URL(fileURLWithPath: first + "/" + relative)) == original, "\(relative) changed on rerun")
            #expect(try Data(contentsOf: URL(fileURLWithPath: second + "/" + relative)) == original, "\(relative) differs in another root")
        }
        #expect(written.count == plan.stubs.count + 1)
    }

    @Test func realLibraryInRootIsUsedAndWhatItLacksIsUnresolved() throws {
        let root = try Scratch.directory("real")
        defer { try? FileManager.default.removeItem(atPath: root) }
        // A real arm64 dylib standing where libSystem is looked for.
        try FileManager.default.createDirectory(atPath: root + "/usr/lib", withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            atPath: StubRootPaths.corpusFile("chained_arm64/libquadmath.0.dylib"), toPath: root + "/usr/lib/libSystem.B.dylib")
        let plan = try StubRootPlan(binaries: [Self.pillow[1]], arches: nil, root: root)
        #expect(!plan.stubs.contains { $0.installName == "/usr/lib/libSystem.B.dylib" })
        #expect(!plan.unresolved.isEmpty)
        #expect(plan.unresolved.allSatisfy { $0.expectedIn == "/usr/lib/libSystem.B.dylib" }, "\(plan.unresolved.prefix(5))")
        #expect(plan.unresolved.contains { $0.symbol == "_malloc" })
    }

    @Test func missingRelativeDylibsAreListed() throws {
        let directory = try Scratch.directory("alone")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let binary = directory + "/_imagingft.cpython-311-darwin.so"
        try FileManager.default.copyItem(atPath: Self.pillow[1], toPath: binary)
        let plan = try StubRootPlan(binaries: [binary], arches: nil, root: directory + "/root")
        #expect(plan.missingDylibs.map(\.installName) == ["@loader_path/.dylibs/libfreetype.6.dylib", "@loader_path/.dylibs/libharfbuzz.0.dylib"])
        #expect(plan.stubs.map(\.installName) == ["/usr/lib/libSystem.B.dylib"])
    }

    @Test func importsMatchObjdump() async throws {
        var comparisons = 0
        for folder in [
            "chained_arm64", "chained_x86_64", "opcodes_x86_64", "fat_universal2", "graph_arm64_pillow/PIL", "graph_arm64_pillow/PIL/.dylibs",
        ].map(StubRootPaths.corpusFile) + ["ios_arm64", "ios_simulator_x86_64"].map(StubRootPaths.bundledFile) {
            let directory = folder
            for name in try FileManager.default.contentsOfDirectory(atPath: directory).sorted() {
                let path = directory + "/" + name
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
                for arch in try ImageFile.architectures(path: path) {
                    let image = try ImageFile.load(path: path, arch: arch).image
                    let want = try await StubRootOracle.imports(of: path, arch: arch, chained: image.chainedFixups != nil)
                    #expect(try StubRootOracle.readerImports(of: image) == want, "\(path) \(arch)")
                    #expect(!want.isEmpty, "\(path) \(arch)")
                    comparisons += 1
                }
            }
        }
        #expect(comparisons >= 30)
    }

    @Test func genAppIsDeterministic() async throws {
        let out = try Scratch.directory("gen-app")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let tool = StubRootPaths.repoRoot.appendingPathComponent("tools/gen-app").path
        for bundle in ["a", "b"] {
            _ = try await Command.run(tool, ["--dylibs", "10", "--seed", "7", "--out", "\(out)/\(bundle)"])
        }
        let files = try StubRootPaths.files(under: "\(out)/a")
        #expect(try StubRootPaths.files(under: "\(out)/b") == files)
        #expect(files.filter { $0.hasPrefix("gen10.app/Frameworks/") }.count == 10)
        for relative in files {
            let a = try Data(contentsOf: URL(fileURLWithPath: "\(out)/a/\(relative)"))
            let b = try Data(contentsOf: URL(fileURLWithPath: "\(out)/b/\(relative)"))
            #expect(a == b, "\(relative) differs between two runs")
        }
    }
}
