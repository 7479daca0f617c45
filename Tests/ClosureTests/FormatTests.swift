@testable import ClosureCache
import TestSupport
import LoaderCore
import MachOReader
import Testing
import LaunchPlan
@testable import ClosureFormat

extension ClosureTests {
    /// The image of the examples: `__DATA_CONST` at 0x1000, `__DATA` at 0x2000.
    static let examplePlan = ImagePlan(path: "example", preferredBase: 0, vmSize: 0x4000, segments: [
        SegmentPlan(name: "__TEXT", vmOffset: 0, vmSize: 0x1000, fileOffset: 0, fileSize: 0x1000,
                    protection: [.read, .execute], readOnlyAfterFixups: false),
        SegmentPlan(name: "__DATA_CONST", vmOffset: 0x1000, vmSize: 0x1000, fileOffset: 0x1000, fileSize: 0x1000,
                    protection: [.read, .write], readOnlyAfterFixups: true),
        SegmentPlan(name: "__DATA", vmOffset: 0x2000, vmSize: 0x2000, fileOffset: 0x2000, fileSize: 0x1000,
                    protection: [.read, .write], readOnlyAfterFixups: false),
    ])

    /// The worked examples of docs/closure-format.md, byte for byte.
    @Test func runEncodingMatchesTheDocumentedExamples() throws {
        let rebases = [(0x1000, 0x500), (0x1008, 0x520), (0x1010, 0x540), (0x2000, 0x1000)].map { location, target in
            ResolvedFixup(vmOffset: UInt64(location), kind: .rebase(targetOffset: UInt64(target), high8: 0))
        }
        let encodedRebases = FixupRuns.encodeRebases(rebases, plan: Self.examplePlan)
        #expect(encodedRebases.bytes == [0x02, 0x80, 0x20, 0x03, 0x08, 0x80, 0x0a, 0x20, 0x20, 0xf0, 0x1f, 0x01, 0x00, 0xc0, 0x15])
        #expect(encodedRebases.count == 4)

        let a = BindTarget.image(1, offset: 0x4a0), b = BindTarget.absolute(0x1234)
        let binds = [(0x3000, a, 0), (0x3008, b, 0), (0x3010, a, 16)].map { location, target, addend in
            ResolvedFixup(vmOffset: UInt64(location), kind: .bind(target, addend: Int64(addend)))
        }
        var targets: [BindTarget] = []
        var index: [BindTarget: Int] = [:]
        let encodedBinds = FixupRuns.encodeBinds(binds, plan: Self.examplePlan, targets: &targets, targetIndex: &index)
        #expect(encodedBinds.bytes == [0x01, 0x80, 0x60, 0x03, 0x08, 0x00, 0x00, 0x01, 0x00, 0x00, 0x10])
        #expect(targets == [a, b])

        let decoded = try FixupRuns.decode(rebases: FixupRunWalk(encodedRebases.bytes[...]), binds: FixupRunWalk(encodedBinds.bytes[...]),
                                           targets: BindTargetTable(targets))
        #expect(decoded == rebases + binds)
    }

    /// A location fixed up twice keeps both fixups, in order, in a stride-0 run.
    @Test func repeatedLocationsKeepTheirOrder() throws {
        let fixups = [
            ResolvedFixup(vmOffset: 0x2010, kind: .rebase(targetOffset: 0x1, high8: 0)),
            ResolvedFixup(vmOffset: 0x2010, kind: .rebase(targetOffset: 0x2, high8: 0)),
            ResolvedFixup(vmOffset: 0x2008, kind: .rebase(targetOffset: 0x3, high8: 0x7f)),
        ]
        let encoded = FixupRuns.encodeRebases(fixups, plan: Self.examplePlan)
        let decoded = try FixupRuns.decode(rebases: FixupRunWalk(encoded.bytes[...]), binds: FixupRunWalk([0]), targets: [])
        #expect(decoded == [fixups[2], fixups[0], fixups[1]])
        #expect(finalFixups(decoded)[0x2010] == .rebase(targetOffset: 0x2, high8: 0))
    }

    /// Locations at one stride that cross a segment boundary start a new run.
    @Test func runsStopAtSegmentBoundaries() throws {
        let fixups = [0x1ff0, 0x1ff8, 0x2000, 0x2008].map {
            ResolvedFixup(vmOffset: UInt64($0), kind: .rebase(targetOffset: 0x100, high8: 0))
        }
        let encoded = FixupRuns.encodeRebases(fixups, plan: Self.examplePlan)
        #expect(encoded.bytes == [0x02, 0xf0, 0x3f, 0x02, 0x08, 0x80, 0x02, 0x00, 0x08, 0x02, 0x08, 0x00, 0x00])
    }
}
