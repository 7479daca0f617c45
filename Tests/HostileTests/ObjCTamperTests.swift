import Foundation
@testable import ClosureCache
import LoaderCore
import TestSupport
import Testing
import LaunchPlan
@testable import ClosureFormat

/// Forged Objective-C parts of the objc fixture's closure (valid checksum): each is refused
/// when the closure is read, before anything is mapped or written.
@Suite(.bounded) struct ObjCTamperTests {
    typealias Forgery = TamperTests.Forgery

    static let forgeries: [Forgery] = [
        Forgery(description: "+load method outside every executable segment") { c in
            let call = c.objc.loads[0]
            let data = c.images[call.method.image].plan.segments.first { !$0.protection.contains(.execute) }!.vmOffset
            c.objc.loads[0] = ObjCLoadCall(image: call.image, method: ImageLocation(image: call.method.image, offset: data),
                                           cls: call.cls, selector: call.selector)
        },
        Forgery(description: "+load class in an image out of range") { c in
            let call = c.objc.loads[0]
            c.objc.loads[0] = ObjCLoadCall(image: call.image, method: call.method,
                                           cls: ImageLocation(image: c.images.count, offset: 0), selector: call.selector)
        },
        Forgery(description: "+load selector past its image's end") { c in
            let call = c.objc.loads[0]
            c.objc.loads[0] = ObjCLoadCall(image: call.image, method: call.method, cls: call.cls,
                                           selector: ImageLocation(image: 0, offset: c.images[0].plan.vmSize))
        },
        Forgery(description: "Objective-C runs for fewer images than the closure has") { c in
            c.objc.bindRuns.removeLast()
            c.objc.bindCounts.removeLast()
        },
    ]

    @Test(arguments: forgeries)
    func forgeryRefusedWhenRead(_ forgery: Forgery) throws {
        let closure = try FixtureApp.named("objc").closure()
        #expect(!closure.objc.loads.isEmpty)
        forgery.expectRefusedWhenRead(closure)
    }

    @Test func unforgedClosureRoundTrips() throws {
        let closure = try FixtureApp.named("objc").closure()
        #expect(try ClosureFile.decode(ClosureFile.encode(closure), path: "objc") == closure)
    }

    // MARK: Consistency (`dyld3 verify`) and the dump

    static let apps = ((try? FixtureApp.all()) ?? []).filter { $0.name == "objc" }

    /// Forgeries the reader cannot see (each field is well-formed alone) and
    /// ``LaunchClosure/objcProblems()`` reports, so `dyld3 verify` calls the file corrupt.
    static let inconsistencies: [Forgery] = [
        Forgery(description: "a write count that disagrees with the runs") { c in
            let index = c.objc.bindCounts.firstIndex { $0 > 0 }!
            c.objc.bindCounts[index] += 1
        },
        Forgery(description: "an Objective-C write in a read-only segment") { c in
            let index = c.objc.bindRuns.firstIndex { !$0.isEmpty }!
            let text = c.images[index].plan.segments.first { $0.protection.contains(.execute) }!
            var writes = try! c.objcWrites(ofImage: index)
            writes[0] = ResolvedFixup(vmOffset: text.vmOffset + 8, kind: writes[0].kind)
            var targets = Array(c.bindTargets)
            var targetIndex = Dictionary(uniqueKeysWithValues: targets.enumerated().map { ($1, $0) })
            let encoded = FixupRuns.encodeBinds(writes, plan: c.images[index].plan, targets: &targets, targetIndex: &targetIndex)
            c.bindTargets = BindTargetTable(targets)
            c.objc.bindRuns[index] = encoded.bytes[...]
            c.objc.bindCounts[index] = encoded.count
        },
        Forgery(description: "+load calls out of initializer order") { c in
            c.objc.loads.reverse()
        },
        Forgery(description: "a +load class in a read-only segment (its image's code)") { c in
            let call = c.objc.loads[0]
            c.objc.loads[0] = ObjCLoadCall(image: call.image, method: call.method, cls: call.method, selector: call.selector)
        },
    ]

    @Test(arguments: apps) func builtClosuresAreConsistent(_ app: FixtureApp) throws {
        let closure = try app.closure()
        #expect(closure.objcProblems().isEmpty, "\(app): \(closure.objcProblems())")
        #expect(closure.consistencyProblems().isEmpty, "\(app): \(closure.consistencyProblems())")
    }

    @Test(arguments: inconsistencies)
    func inconsistencyReportedByVerify(_ forgery: Forgery) throws {
        var closure = try FixtureApp.named("objc").closure()
        forgery.forge(&closure)
        let decoded = try ClosureFile.decode(ClosureFile.encode(closure), path: "forged")
        #expect(!decoded.objcProblems().isEmpty, "\(forgery)")
        #expect(!decoded.consistencyProblems().isEmpty, "\(forgery)")
    }

    /// The dump's Objective-C part: one `+load` line per `+load` id in the twin's init log
    /// (the manifest's, not the closure builder's), the runtime (libobjc) as the one image
    /// holding the tables, and per-image write counts that add up to the closure's.
    @Test(arguments: apps) func dumpShowsTheObjCPart(_ app: FixtureApp) throws {
        let cache = FileManager.default.temporaryDirectory.appendingPathComponent("objc-dump-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: cache) }
        let path = try app.install(into: cache)
        let dump = try ClosureDump(path: path)
        let text = try dump.objcText()
        #expect(try dump.text().contains(text))
        let data = try Data(contentsOf: URL(fileURLWithPath: app.bundle + "/manifest.json"))
        let manifest = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let imageCount = try #require(manifest["images"] as? [Any]).count
        let loadIds = try #require((manifest["expect"] as? [String: Any])?["initLog"] as? [Int]).filter { $0 > imageCount }
        let lines = text.split(separator: "\n")
        #expect(lines.filter { $0.contains(": method image ") }.count == loadIds.count, "\(app)")
        let tableLines = lines.filter { $0.hasSuffix("(runtime tables)") }
        #expect(tableLines.count == 1 && tableLines[0].contains("(libobjc.A.dylib)"), "\(app): \(tableLines)")
        let counts = lines.compactMap { line -> Int? in
            guard line.hasSuffix("(selectors and protocols)") || line.hasSuffix("tables)"), let colon = line.range(of: "): ") else { return nil }
            return Int(line[colon.upperBound...].prefix { $0.isNumber })
        }
        #expect(counts.count >= 4 && counts.reduce(0, +) == dump.closure.objc.totalWrites, "\(app): \(counts)")
        #expect(lines.first == "objective-c: \(dump.closure.objc.totalWrites) writes, \(loadIds.count) +load calls", "\(app)")
    }
}
