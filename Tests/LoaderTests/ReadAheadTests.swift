import Foundation
import LoaderCore
import MachOReader
import Testing
import TestSupport
import LaunchPlan
import LoaderSystem

/// What a launch asks the kernel to read ahead of each image
/// (`ImagePlan.readAheadRange(deferred:)`), against the segments llvm-objdump-19 lists.
@Suite(.bounded) struct ReadAheadTests {
    /// One `LC_SEGMENT_64` as `llvm-objdump --macho --private-headers` prints it.
    struct ObjdumpSegment {
        var name = ""
        var fileOffset: UInt64 = 0
        var fileSize: UInt64 = 0
        var vmSize: UInt64 = 0
        var initialProtection = ""
        var flags = ""
    }

    static func segments(_ text: String) -> [ObjdumpSegment] {
        var segments: [ObjdumpSegment] = []
        var inSegment = false
        for raw in text.split(separator: "\n") {
            let parts = raw.trimmingCharacters(in: .whitespaces).split(separator: " ", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { continue }
            switch (parts[0], parts[1]) {
            case ("cmd", "LC_SEGMENT_64"): segments.append(ObjdumpSegment()); inSegment = true
            case ("cmd", _): inSegment = false
            case ("segname", let value) where inSegment: segments[segments.count - 1].name = value
            case ("fileoff", let value) where inSegment: segments[segments.count - 1].fileOffset = UInt64(value) ?? 0
            case ("filesize", let value) where inSegment: segments[segments.count - 1].fileSize = UInt64(value) ?? 0
            case ("vmsize", let value) where inSegment: segments[segments.count - 1].vmSize = UInt64(value.dropFirst(2), radix: 16) ?? 0
            case ("initprot", let value) where inSegment: segments[segments.count - 1].initialProtection = value
            case ("flags", let value) where inSegment: segments[segments.count - 1].flags = value
            default: continue
            }
        }
        return segments
    }

    /// The range by the rule, from objdump's table: the first file byte of a mapped segment
    /// to the end of the last segment written at launch (initially writable, `__DATA_CONST`
    /// or `SG_READ_ONLY`), at least the header's page.
    static func expectedRange(_ segments: [ObjdumpSegment], page: UInt64) -> Range<UInt64>? {
        let mapped = segments.filter { !($0.initialProtection == "---" && $0.fileSize == 0) && $0.vmSize > 0 && $0.fileSize > 0 }
        guard let start = mapped.map(\.fileOffset).min() else { return nil }
        let written = mapped.filter { $0.initialProtection.contains("w") || $0.name == "__DATA_CONST" || $0.flags.contains("SG_READ_ONLY") }
        return start..<max(start + page, written.map { $0.fileOffset + $0.fileSize }.max() ?? 0)
    }

    @Test func theRangeRunsFromTheHeaderToTheLastWrittenSegment() async throws {
        let page = UInt64(sysconf(Int32(_SC_PAGESIZE)))
        var checked = 0
        var linkeditLeftOut = 0
        for app in try FixtureApp.all() {
            let files = [app.executable] + app.imagePaths.map { $0.path.hasPrefix("/") ? app.root + $0.path : app.bundle + "/" + $0.path }
            for path in files where FileManager.default.fileExists(atPath: path) {
                let file = try ImageFile.load(path: path, arch: app.arch)
                #expect(file.sliceOffset == 0, "\(path): fixtures are thin")
                let plan = try ImagePlan(image: file.image, path: path, sliceOffset: file.sliceOffset)
                let objdump = Self.segments(try await Oracle.objdump(["--private-headers", path]))
                let range = plan.readAheadRange()
                #expect(range == Self.expectedRange(objdump, page: page), "\(app): \(path)")
                if let range, let linkedit = objdump.first(where: { $0.name == "__LINKEDIT" }), linkedit.fileOffset >= range.upperBound {
                    linkeditLeftOut += 1
                }
                // Page-in linking leaves its deferred segments to their faults: the header alone.
                if let range {
                    #expect(plan.readAheadRange(deferred: plan.segments.map(\.isWritable)) == range.lowerBound..<range.lowerBound + page,
                            "\(app): \(path) with every writable segment deferred")
                }
                checked += 1
            }
        }
        #expect(checked >= 40, "images checked: \(checked)")
        #expect(linkeditLeftOut >= 40, "images whose __LINKEDIT is not read ahead: \(linkeditLeftOut)")
    }

    /// A plan comes from an untrusted closure and is asked for before the plan check: a
    /// forged range is clamped to the file and never traps.
    @Test func aForgedPlanAsksForNothingOutsideTheFile() throws {
        let app = try #require(try FixtureApp.all().first { $0.variant == "x86_64-chained" })
        let path = app.executable
        let forged = ImagePlan(path: path, preferredBase: 0, vmSize: 0x2000, segments: [
            SegmentPlan(name: "__TEXT", vmOffset: 0, vmSize: 0x1000, fileOffset: UInt64.max - 0x800, fileSize: 0x1000,
                        protection: [.read, .execute], readOnlyAfterFixups: false),
            SegmentPlan(name: "__DATA", vmOffset: 0x1000, vmSize: 0x1000, fileOffset: UInt64.max - 0x10, fileSize: 0x1000,
                        protection: [.read, .write], readOnlyAfterFixups: false),
        ])
        #expect(forged.readAheadRange() == nil, "a range that wraps past the end of the offsets is dropped")
        let file = try #require(try? ImageDescriptor.open(path))
        file.readAhead((UInt64.max - 0x1000)..<UInt64.max)
        file.readAhead(file.status.size..<(file.status.size + 0x10000))
        file.readAhead(0..<UInt64.max)
        // The descriptor still reads the file as before.
        #expect(file.read(offset: 0, count: 4) == [0xcf, 0xfa, 0xed, 0xfe])
    }
}
