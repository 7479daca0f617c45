import Dyld3
import Foundation
@testable import LaunchBench
import LoaderCore
import Testing
import TestSupport
import LaunchMemory

/// The floor with protections ends with the memory dyld3 leaves, protections included: page
/// for page, the same protection at the same offset from the region's start (the layout is
/// shared), on every fixture app that launches. The plain floor differs exactly where a
/// segment becomes read-only after fixups, so the comparison has something to find.
@Suite(.bounded) struct FloorProtectionTests {
    static let page = UInt64(sysconf(Int32(_SC_PAGESIZE)))

    static func protections(_ memory: LaunchMemory) throws -> [String?] {
        defer { memory.release() }
        return try ProcessMaps.pageProtections(in: memory.regionBase..<(memory.regionBase + memory.regionSize), pageSize: page)
    }

    @Test func theProtectedFloorEndsWithDyld3sProtections() throws {
        let cache = NSTemporaryDirectory() + "floor-protection-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: cache) }
        var apps = 0, appsWithReadOnlyData = 0
        for app in try FixtureApp.all() where app.launches {
            let closurePath = try app.install(into: cache)
            let request = LaunchOptions(roots: [app.executable], arch: app.arch, root: app.root, run: false)
            let dyld3 = try FloorProtectionTests.protections(try FastPath.launch(closurePath: closurePath, request: request).memory)
            let floor = try MappingFloor(try app.closure())
            let protected = try FloorProtectionTests.protections(try floor.launch(readAhead: false, protections: true).memory)
            let plain = try FloorProtectionTests.protections(try floor.launch(readAhead: false, protections: false).memory)
            #expect(dyld3.count == protected.count && dyld3.allSatisfy { $0 != nil }, "\(app): region of \(dyld3.count) pages")
            let same = protected == dyld3
            #expect(same, "\(app): first page that differs: \(String(describing: protected.indices.first { $0 >= dyld3.count || protected[$0] != dyld3[$0] }))")
            let loweredToReadOnly = zip(plain, dyld3).filter { $0 == "rw-" && $1 == "r--" }.count
            #expect(loweredToReadOnly == zip(plain, dyld3).filter { $0 != $1 }.count, "\(app): the plain floor differs only by __DATA_CONST's write bit")
            apps += 1
            if loweredToReadOnly > 0 { appsWithReadOnlyData += 1 }
        }
        #expect(apps >= 8, "fixture apps that launch: \(apps)")
        #expect(appsWithReadOnlyData >= 4, "apps with a segment read-only after fixups: \(appsWithReadOnlyData)")
    }
}
