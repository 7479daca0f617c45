import ClosureBuild
import ClosureFormat
import Dyld2
import Dyld3
import Foundation
import ClosureCache
import LaunchComparison
import LoaderCore
import MachOReader
import StubRoot
import Testing
import TestSupport

/// Real iOS extension modules (public iOS wheels, built by Apple's toolchain) under one stub
/// root: each is loaded into the root's app host (`App.app/App`), finds
/// `@rpath/Python.framework/Python` in the bundle's `Frameworks` through the host's
/// `LC_RPATH`, and is mapped and fixed up by both paths (nothing runs: the root's images
/// are stubs, and arm64 could not run here anyway): the slow
/// path writes exactly the fixups llvm-objdump-19 lists, the closure verifies after a round
/// trip through its file, and dyld2 and dyld3 leave identical memory.
@Suite(.serialized, .bounded) struct IOSModuleTests {
    static let modules = [
        "_speedups.cpython-313-iphoneos.so", "_imagingmath.cpython-313-iphoneos.so",
        "_imagingmorph.cpython-313-iphoneos.so", "_cffi_backend.cpython-313-iphoneos.so",
    ].map { Paths.bundledCorpus.path + "/ios_arm64/" + $0 }

    /// markupsafe's module for the iOS simulator on x86_64.
    static let simulatorModule = Paths.bundledCorpus.path + "/ios_simulator_x86_64/_speedups.cpython-313-iphonesimulator.so"

    @Test func iosModulesLoadIntoTheAppHostAndBothPathsAgree() async throws {
        try await Self.check(Self.modules, arch: "arm64")
    }

    @Test func simulatorModuleLoadsIntoTheAppHostAndBothPathsAgree() async throws {
        try await Self.check([Self.simulatorModule], arch: "x86_64")
    }

    static func check(_ modules: [String], arch: String) async throws {
        for module in modules {
            #expect(FileManager.default.fileExists(atPath: module), "missing corpus file \(module)")
        }
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("dyld3-ios-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let plan = try StubRootPlan(binaries: modules, arches: [arch], root: root)
        #expect(plan.unresolved.isEmpty && plan.missingDylibs.isEmpty, "\(plan.unresolved) \(plan.missingDylibs)")
        try await plan.write()
        let python = root + "/App.app/Frameworks/Python.framework/Python"
        for module in modules {
            let fileType = try ImageFile.load(path: module, arch: arch).image.header.fileType
            let roots = try LaunchRoots.roots(for: module, fileType: fileType, root: root, host: nil)
            #expect(roots == [root + "/App.app/App", module])

            let launch = try SlowPath.launch(LaunchOptions(roots: roots, arch: arch, root: root, run: false, recordFixups: true))
            defer { launch.memory.release() }
            #expect(launch.report.images.contains(python), "\(module): \(launch.report.images)")
            let fixups = try #require(launch.fixups)
            let index = try #require(launch.memory.images.firstIndex { $0.plan.path == module })
            let image = launch.memory.images[index]
            let written = Set(fixups[index].map { image.plan.preferredBase + $0.vmOffset })
            let listed = try await FixupLocationTests.objdumpAddresses(module, arch: arch, chained: false)
            #expect(written == listed, "\(module): written-only \(written.subtracting(listed).count), listed-only \(listed.subtracting(written).count)")
            #expect(!written.isEmpty)

            let closure = try ClosureBuilder.build(roots: roots, arch: arch, root: root)
            let path = root + "/" + (module as NSString).lastPathComponent + "." + ClosureCache.fileExtension
            try ClosureFile.write(closure, to: path)
            let reread = try ClosureFile.read(path)
            #expect(reread == closure)
            #expect(reread.staleImage(closurePath: path) == nil)
            let comparison = try LaunchComparison.run(
                options: LaunchOptions(roots: roots, arch: arch, root: root, run: true), closure: reread, closurePath: path)
            #expect(comparison.differences.isEmpty, "\(module): \(comparison.differences.prefix(5))")
            #expect(comparison.fixupsCompared >= written.count)
            #expect(comparison.dyld2Result == nil && comparison.dyld3Result == nil)
            #expect(comparison.notRun?.description != nil)
        }
    }
}
