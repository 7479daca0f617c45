import Foundation
import LaunchPlan
import LoaderCore
import MachOReader
import StubRoot
import Testing
import TestSupport

/// Stub roots for binaries that link frameworks an app ships (`@rpath/...`,
/// `@executable_path/...`): the host is laid out as an iOS or macOS app bundle whose
/// `LC_RPATH` reaches the stub frameworks, everything built for the binaries' platform.
@Suite(.serialized, .bounded)
struct AppStubRootTests {
    /// The real iOS extension modules of the corpus (each links `@rpath/Python.framework/Python`
    /// and has no `LC_RPATH`).
    static let iosModules = [
        "_speedups.cpython-313-iphoneos.so", "_imagingmath.cpython-313-iphoneos.so",
        "_imagingmorph.cpython-313-iphoneos.so", "_cffi_backend.cpython-313-iphoneos.so",
    ].map { StubRootPaths.bundledFile("ios_arm64/" + $0) }

    /// `platform NAME` of every `LC_BUILD_VERSION` llvm-objdump lists for `path`.
    static func platforms(_ path: String) async throws -> [String] {
        try await Command.objdump(["--private-headers", path]).split(separator: "\n")
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { $0.hasPrefix("platform ") }
    }

    /// The `LC_RPATH` paths llvm-objdump lists for `path`.
    static func rpaths(_ path: String) async throws -> [String] {
        try await Command.objdump(["--private-headers", path]).split(separator: "\n")
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { $0.hasPrefix("path ") }
            .map { String($0.dropFirst("path ".count).prefix { $0 != " " }) }
    }

    @Test func iosModulesLoadFromAnAppBundleWithAStubPythonFramework() async throws {
        for module in Self.iosModules {
            #expect(FileManager.default.fileExists(atPath: module), "missing corpus file \(module)")
            let image = try ImageFile.load(path: module, arch: "arm64").image
            #expect(image.rpaths.isEmpty && image.dependencies.map(\.installName).contains("@rpath/Python.framework/Python"))
        }
        let (plan, checks, comparisons) = try await StubRootTests.buildAndCheck(Self.iosModules, arches: nil, label: "ios")
        defer { try? FileManager.default.removeItem(atPath: plan.root) }
        #expect(comparisons > 0)
        #expect(plan.platform == .iOS)
        #expect(plan.host.path == plan.root + "/App.app/App")
        #expect(plan.host.rpaths == ["@executable_path/Frameworks"])
        #expect(try await Self.rpaths(plan.host.path) == ["@executable_path/Frameworks"])
        let python = try #require(plan.stubs.first { $0.installName == "@rpath/Python.framework/Python" })
        #expect(python.path == plan.root + "/App.app/Frameworks/Python.framework/Python")
        #expect(python.slices.allSatisfy { $0.exports.contains { $0.name == "__Py_NoneStruct" } })
        #expect(plan.stubs.contains { $0.path == plan.root + "/usr/lib/libSystem.B.dylib" })
        // Everything written is built for iOS, as the modules are.
        for path in plan.stubs.map(\.path) + [plan.host.path] {
            #expect(try await Self.platforms(path) == ["platform ios"], "\(path)")
        }
        for module in Self.iosModules {
            #expect(try await Self.platforms(module) == ["platform ios"], "\(module)")
        }
        // Each module's graph loads the framework stub from the bundle, through the host's rpath.
        #expect(checks.count == Self.iosModules.count)
        for check in checks {
            #expect(check.graph.nodes.first?.path == plan.host.path)
            #expect(check.graph.nodes.contains { $0.path == python.path }, "\(check.graph.nodes.map(\.path))")
        }
        #expect(plan.stubListing.first == "host \(plan.host.path) (ios, LC_RPATH @executable_path/Frameworks)")
        #expect(plan.stubListing.contains("stub \(python.path) (install name @rpath/Python.framework/Python)"))
    }

    @Test func simulatorModuleGetsASimulatorRoot() async throws {
        let module = StubRootPaths.bundledFile("ios_simulator_x86_64/_speedups.cpython-313-iphonesimulator.so")
        #expect(try await Self.platforms(module) == ["platform iossimulator"])
        let (plan, checks, _) = try await StubRootTests.buildAndCheck([module], arches: nil, label: "simulator")
        defer { try? FileManager.default.removeItem(atPath: plan.root) }
        #expect(plan.platform == .iOSSimulator)
        #expect(plan.host.path == plan.root + "/App.app/App")
        for path in plan.stubs.map(\.path) + [plan.host.path] {
            #expect(try await Self.platforms(path) == ["platform iossimulator"], "\(path)")
        }
        #expect(checks.first?.graph.nodes.contains { $0.path == plan.root + "/App.app/Frameworks/Python.framework/Python" } == true)
    }

    @Test func iosRootIsReproducible() async throws {
        let first = try Scratch.directory("ios-first"), second = try Scratch.directory("ios-second")
        defer {
            try? FileManager.default.removeItem(atPath: first)
            try? FileManager.default.removeItem(atPath: second)
        }
        let module = [Self.iosModules[0]]
        let plan = try StubRootPlan(binaries: module, arches: nil, root: first)
        try await plan.write()
        let written = try StubRootPaths.files(under: first)
        #expect(written == ["App.app/App", "App.app/Frameworks/Python.framework/Python", "usr/lib/libSystem.B.dylib"])
        let bytes = try written.map { try Data(contentsOf: URL(fileURLWithPath: first + "/" + $0)) }
        // The framework stub of the first run is taken for absent: the same plan again.
        let again = try StubRootPlan(binaries: module, arches: nil, root: first)
        #expect(again == plan)
        try await again.write()
        try await StubRootPlan(binaries: module, arches: nil, root: second).write()
        for (relative, original) in zip(written, bytes) {
            #expect(try Data(contentsOf: URL(fileURLWithPath: first + "/" + relative)) == original, "\(relative) changed on rerun")
            #expect(try Data(contentsOf: URL(fileURLWithPath: second + "/" + relative)) == original, "\(relative) differs in another root")
        }
    }

    /// A macOS dylib linking one framework by `@rpath` and one by `@executable_path`, and
    /// one dylib by `@loader_path` that no stub can stand for (it would lie beside the
    /// binary, outside the root), built with the stub toolchain; the frameworks it was
    /// linked against are then removed.
    static func macOSBinary(in directory: String, loaderPathDependency: Bool) async throws -> String {
        let toolchain = StubToolchain()
        var references = ["_foo_data", "_bar_data"]
        var libraries = [("Foo", "@rpath/Foo.framework/Foo"), ("Bar", "@executable_path/../Frameworks/Bar.framework/Bar")]
        if loaderPathDependency {
            references.append("_baz_data")
            libraries.append(("Baz", "@loader_path/libBaz.dylib"))
        }
        var inputs: [String] = []
        for ((name, installName), symbol) in zip(libraries, references) {
            let source = "\(directory)/\(name).s"
            try "\t.data\n\t.globl \(symbol)\n\(symbol):\n\t.quad 0\n".write(toFile: source, atomically: true, encoding: .utf8)
            _ = try await Command.run(toolchain.clang, ["-target", "arm64-apple-macos11", "-c", source, "-o", "\(directory)/\(name).o"])
            _ = try await Command.run(toolchain.linker, [
                "-arch", "arm64", "-platform_version", "macos", "11.0", "11.0", "-dylib", "-install_name", installName,
                "\(directory)/\(name).o", "-o", "\(directory)/\(name)"])
            inputs.append("\(directory)/\(name)")
        }
        let source = "\(directory)/module.s"
        try ("\t.data\n" + references.map { "\t.quad \($0)\n" }.joined()).write(toFile: source, atomically: true, encoding: .utf8)
        _ = try await Command.run(toolchain.clang, ["-target", "arm64-apple-macos11", "-c", source, "-o", "\(directory)/module.o"])
        let binary = "\(directory)/module.so"
        _ = try await Command.run(toolchain.linker, [
            "-arch", "arm64", "-platform_version", "macos", "11.0", "11.0", "-bundle", "\(directory)/module.o", "-o", binary] + inputs)
        for input in inputs { try FileManager.default.removeItem(atPath: input) }
        return binary
    }

    @Test func macOSFrameworksGetAMacOSAppBundle() async throws {
        let directory = try Scratch.directory("macos-app")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let binary = try await Self.macOSBinary(in: directory, loaderPathDependency: false)
        // A root that already holds a stub bin/host (from a graph that needed no app).
        let root = directory + "/root"
        try await StubRootPlan(binaries: [StubRootPaths.corpusFile("chained_arm64/libgfortran.5.dylib")], arches: nil, root: root).write()
        #expect(FileManager.default.fileExists(atPath: root + "/bin/host"))

        let plan = try StubRootPlan(binaries: [binary], arches: nil, root: root)
        #expect(plan.unresolved.isEmpty && plan.missingDylibs.isEmpty, "\(plan.unresolved) \(plan.missingDylibs)")
        try await plan.write()
        #expect(try await StubRootOracle.expectFilesMatchPlan(plan) > 0)
        #expect(plan.platform == .macOS)
        #expect(plan.host.path == root + "/App.app/Contents/MacOS/App")
        #expect(try await Self.rpaths(plan.host.path) == ["@executable_path/../Frameworks"])
        #expect(Dictionary(uniqueKeysWithValues: plan.stubs.map { ($0.installName, $0.path) }) == [
            "@rpath/Foo.framework/Foo": root + "/App.app/Contents/Frameworks/Foo.framework/Foo",
            "@executable_path/../Frameworks/Bar.framework/Bar": root + "/App.app/Contents/Frameworks/Bar.framework/Bar",
        ])
        for path in plan.stubs.map(\.path) + [plan.host.path] {
            #expect(try await Self.platforms(path) == ["platform macos"], "\(path)")
        }
        // One host per root: the former stub bin/host is gone, and a launch finds the app's.
        #expect(!FileManager.default.fileExists(atPath: root + "/bin/host"))
        let check = try CompletenessCheck(binary: binary, arch: "arm64", root: root)
        #expect(check.unresolved.isEmpty && check.checkedImports == 2, "\(check.unresolved)")
        let frameworks = root + "/App.app/Contents/Frameworks"
        #expect(check.graph.nodes.map(\.path) == [plan.host.path, binary, frameworks + "/Foo.framework/Foo", frameworks + "/Bar.framework/Bar"])
    }

    @Test func loaderPathDependencyOutsideTheRootStaysMissing() async throws {
        let directory = try Scratch.directory("loader-path")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let binary = try await Self.macOSBinary(in: directory, loaderPathDependency: true)
        let plan = try StubRootPlan(binaries: [binary], arches: nil, root: directory + "/root")
        #expect(plan.missingDylibs.map(\.installName) == ["@loader_path/libBaz.dylib"])
        #expect(plan.missingDylibs.first?.tried.first == directory + "/libBaz.dylib")
        #expect(Set(plan.stubs.map(\.installName)) == ["@rpath/Foo.framework/Foo", "@executable_path/../Frameworks/Bar.framework/Bar"])
    }

    @Test func binariesOfTwoPlatformsAreRefused() throws {
        let macOS = StubRootPaths.corpusFile("chained_arm64/libgfortran.5.dylib")
        #expect {
            _ = try StubRootPlan(binaries: [macOS, Self.iosModules[0]], arches: nil, root: "/nonexistent-stub-root")
        } throws: { error in
            (error as? CommandFailure) == .mixedPlatforms(binary: Self.iosModules[0], arch: "arm64", platform: "ios", others: "macos")
        }
    }
}
