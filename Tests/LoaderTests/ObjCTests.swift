import ClosureBuild
import Dyld2
import Foundation
import ClosureCache
import LaunchComparison
import LoaderCore
import MachOReader
import TestSupport
import Testing
import ClosureFormat

/// The Objective-C step on the objc fixture, every arch and style: both launch paths leave
/// identical memory and return the plain-C twin's result (x86_64), every selector name has
/// one address after the step, the runtime's class table holds every class of every
/// `__objc_classlist` (counted by llvm-objdump), and the closure carries one `+load` call
/// per `+load` id in the twin's init log.
@Suite(.bounded) struct ObjCTests {
    static let apps = ((try? FixtureApp.all()) ?? []).filter { $0.name == "objc" }

    @Test func everyVariantIsBuilt() {
        #expect(Self.apps.count == FixtureApp.variants.count)
    }

    /// The manifest's init log (the twin's): ids above the image count are `+load` methods.
    static func loadIds(_ app: FixtureApp) throws -> [Int] {
        let data = try Data(contentsOf: URL(fileURLWithPath: app.bundle + "/manifest.json"))
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let images = try #require(object["images"] as? [Any]).count
        let log = try #require((object["expect"] as? [String: Any])?["initLog"] as? [Int])
        return log.filter { $0 > images }
    }

    @Test(arguments: apps)
    func bothPathsAgreeWithTheTwin(_ app: FixtureApp) throws {
        guard case let .result(expected, _) = app.expectation else { Issue.record("\(app): expects a result"); return }
        let closure = try app.closure()
        #expect(closure.objc.loads.count == (try Self.loadIds(app)).count, "\(app)")
        #expect(closure.objc.totalWrites > 0, "\(app)")
        let options = LaunchOptions(roots: [app.executable], arch: app.arch, root: app.root)
        let comparison = try LaunchComparison.run(options: options, closure: closure, closurePath: "objc closure")
        #expect(comparison.differences.isEmpty, "\(app): \(comparison.differences.prefix(3))")
        if app.arch == CodeRunner.hostArchitecture {
            #expect(comparison.dyld2Result == expected, "\(app)")
            #expect(comparison.dyld3Result == expected, "\(app)")
        }
    }

    @Test(arguments: apps)
    func selectorsAreUniqueAndTablesComplete(_ app: FixtureApp) async throws {
        let launch = try SlowPath.launch(LaunchOptions(roots: [app.executable], arch: app.arch, root: app.root, run: false))
        defer { launch.memory.release() }
        let space = launch.memory.objcAddressSpace()
        var address: [[UInt8]: Set<UInt64>] = [:]
        var crossImage = 0
        var classListEntries = 0
        for (index, path) in launch.report.images.enumerated() {
            let sections = try await Oracle.objdump(["--macho", "--section-headers", path])
            classListEntries += Self.sectionSize("__objc_classlist", in: sections) / 8
            let image = try MachOImage(parsing: Array(try Data(contentsOf: URL(fileURLWithPath: path))))
            guard let objc = try ObjCSections(image: image), let refs = objc.selectorReferences else { continue }
            for slot in 0..<refs.pointerCount {
                let base = launch.memory.images[index].base
                let value = try space.u64(at: base + refs.vmOffset + UInt64(slot * 8), what: "selref")
                address[try space.cString(at: value, what: "name"), default: []].insert(value)
                if space.location(of: value)?.image != index { crossImage += 1 }
            }
        }
        #expect(address.values.allSatisfy { $0.count == 1 }, "\(app): \(address.filter { $0.value.count > 1 }.keys.map { String(decoding: $0, as: UTF8.self) })")
        #expect(crossImage > 0, "\(app): no selector reference was rewritten to another image's name")
        #expect(address.count >= 4, "\(app)")
        // The runtime's header: class count at +40 (written by the step).
        let runtime = try #require(launch.report.images.firstIndex { $0.hasSuffix("/usr/lib/libobjc.A.dylib") })
        let runtimeImage = try MachOImage(parsing: Array(try Data(contentsOf: URL(fileURLWithPath: launch.report.images[runtime]))))
        let tables = try #require(ObjCSections.runtimeTables(in: runtimeImage))
        let classCount = try space.u64(at: launch.memory.images[runtime].base + tables.vmOffset + 40, what: "class count")
        #expect(classCount == UInt64(classListEntries), "\(app)")
        #expect(classListEntries == 8, "\(app): Obj, Shape, Hexagon, Square, Poly, Triangle and two Dup")
    }

    /// The size column of `section` in llvm-objdump's `--section-headers` output.
    static func sectionSize(_ section: String, in text: String) -> Int {
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ")
            if fields.count >= 3, fields[1] == section { return Int(fields[2], radix: 16) ?? 0 }
        }
        return 0
    }
}
