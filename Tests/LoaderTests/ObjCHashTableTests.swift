import Dyld2
import Foundation
import LaunchPlan
import LoaderCore
import MachOReader
import TestSupport
import Testing

/// The runtime's hash tables (docs/objc.md, "Preoptimized hash tables") on the objc fixture:
/// the step run again over a launch's memory whose runtime header reserves too few slots,
/// or has another layout's magic, fails with one error naming libobjc; with the header as
/// built, it writes the same words the launch did.
@Suite(.bounded) struct ObjCHashTableTests {
    static let app = ((try? FixtureApp.all()) ?? []).first { $0.name == "objc" && $0.arch == "x86_64" }

    /// The step over `launch`'s memory, after `patch` (value, offset in the runtime's header).
    static func rerun(_ launch: Launch, arch: String, patch: (value: UInt64, offset: UInt64)?) throws -> Result<ObjCSetup?, LoadError> {
        let paths = launch.report.images
        let images = try paths.map { try ImageFile.load(path: $0, arch: arch).image }
        let runtime = try #require(paths.firstIndex { $0.hasSuffix("/usr/lib/libobjc.A.dylib") })
        let tables = try #require(ObjCSections.runtimeTables(in: images[runtime]))
        var original: UInt64?
        if let patch {
            original = try launch.memory.load(image: runtime, vmOffset: tables.vmOffset + patch.offset)
            try launch.memory.store(patch.value, image: runtime, vmOffset: tables.vmOffset + patch.offset)
        }
        defer { if let patch, let original { try? launch.memory.store(original, image: runtime, vmOffset: tables.vmOffset + patch.offset) } }
        do {
            return .success(try ObjCSetup.compute(images: images, paths: paths, initializerOrder: Array(images.indices), memory: launch.memory))
        } catch {
            return .failure(error)
        }
    }

    @Test func tooFewSlotsOrAnotherLayoutIsOneErrorNamingTheRuntime() throws {
        let app = try #require(Self.app)
        let launch = try SlowPath.launch(LaunchOptions(roots: [app.executable], arch: app.arch, root: app.root, run: false))
        defer { launch.memory.release() }
        let runtimePath = try #require(launch.report.images.first { $0.hasSuffix("/usr/lib/libobjc.A.dylib") })

        // As built: the same writes again (every table fits; the launch's own writes are in place).
        guard case let .success(setup?) = try Self.rerun(launch, arch: app.arch, patch: nil) else {
            Issue.record("the step does not run again"); return
        }
        #expect(setup.writes.joined().count > 0)

        // The selector table the launch wrote: its key count and mask (header +80, +72).
        let paths = launch.report.images
        let runtime = try #require(paths.firstIndex(of: runtimePath))
        let tables = try #require(ObjCSections.runtimeTables(in: try ImageFile.load(path: runtimePath, arch: app.arch).image))
        let count = try launch.memory.load(image: runtime, vmOffset: tables.vmOffset + 80)
        let mask = try launch.memory.load(image: runtime, vmOffset: tables.vmOffset + 72)
        var capacity: UInt64 = 16
        while capacity < 2 * count { capacity *= 2 }
        #expect(count >= 6 && mask == capacity - 1, "load, value, kind, sides, tag, area at least; \(count) keys, mask \(mask)")
        // Exactly the slots it needs: accepted. Half of them: one line naming libobjc.
        guard case .success = try Self.rerun(launch, arch: app.arch, patch: (capacity, 56)) else {
            Issue.record("\(capacity) selector slots refused"); return
        }
        guard case let .failure(error) = try Self.rerun(launch, arch: app.arch, patch: (capacity / 2, 56)) else {
            Issue.record("\(capacity / 2) selector slots accepted"); return
        }
        let text = "\(error)"
        #expect(text.contains(runtimePath), "\(text)")
        #expect(text.contains("\(count) selector keys need a hash table of \(capacity) slots, the runtime reserves \(capacity / 2)"), "\(text)")
        #expect(!text.contains("\n"), "one line: \(text)")

        // Class-name slots reserved: 8 (below the minimum capacity of 16).
        guard case let .failure(classError) = try Self.rerun(launch, arch: app.arch, patch: (8, 88)) else {
            Issue.record("8 class-name slots accepted"); return
        }
        #expect("\(classError)".contains("class name keys need a hash table of 16 slots, the runtime reserves 8"), "\(classError)")

        // The former layout's magic ("OBJCTAB1"): refused, with the fix.
        guard case let .failure(magicError) = try Self.rerun(launch, arch: app.arch, patch: (0x3142_4154_434a_424f, 0)) else {
            Issue.record("an OBJCTAB1 header accepted"); return
        }
        #expect("\(magicError)".contains(runtimePath) && "\(magicError)".contains("not OBJCTAB2"), "\(magicError)")
    }
}
