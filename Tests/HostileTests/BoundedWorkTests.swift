@testable import Dyld3
import Foundation
@testable import ClosureCache
import LoaderCore
import MachOReader
import TestSupport
import Testing
import LaunchPlan
@testable import ClosureFormat
import LoaderSystem

/// Work bounded by the input: a closure cannot make `verify`, `closure dump` or a launch do
/// work, or hold memory, in proportion to what it claims rather than to the images it
/// describes. A body declared far larger than its frames is refused before it is
/// decompressed, and a run claiming more locations than its segment has room for is refused
/// before its first entry. Peak memory is the child's own (`PeakMemory`).
@Suite(.serialized, .bounded) struct BoundedWorkTests {
    static let bound = 100 << 20

    /// `app`'s closure with its main image's rebases replaced by one stride-0 run of `count`
    /// entries at the start of `__DATA`: `count` stores to one location.
    static func oneLongRun(_ app: FixtureApp, count: Int) throws -> LaunchClosure {
        var closure = try app.closure()
        let main = closure.rootCount - 1
        let data = try #require(closure.images[main].plan.segments.first { $0.name == "__DATA" })
        var runs = LEB128.unsigned(1) + LEB128.unsigned(data.vmOffset) + LEB128.unsigned(UInt64(count)) + LEB128.unsigned(0)
        runs += [UInt8](repeating: 0, count: count)
        closure.images[main].rebaseRuns = runs[...]
        closure.images[main].rebaseCount = count
        closure.images[main].fixupPageIndex = .absent
        return closure
    }

    /// Runs `dyld3 ARGS` under the peak-memory harness with a time limit.
    static func measured(_ arguments: [String]) async throws -> PeakMemory.Result {
        try await PeakMemory.run("/usr/bin/timeout", ["-s", "KILL", "120", try Dyld3Binary.path()] + arguments)
    }

    /// A closure file of a few KB whose body is one run of 40 M (then 400 M) fixups: verify,
    /// dump and launch refuse it from its header, in bounded memory.
    @Test(arguments: [40_000_000, 400_000_000])
    func aTinyClosureClaimingMillionsOfFixupsIsRefusedInBoundedMemory(_ count: Int) async throws {
        let app = try FixtureApp.named("basic")
        let cache = try Scratch.directory("bounded-claim")
        defer { Scratch.remove(cache) }
        let path = ClosureCache(directory: cache).closurePath(forApp: app.executable, arch: app.arch)
        try ClosureFile.write(try Self.oneLongRun(app, count: count), to: path)
        let size = try #require(FileStatus.of(path)).size
        #expect(size < 16 << 10, "\(size) bytes")
        #expect {
            _ = try ClosureFile.read(path)
        } throws: { error in
            guard case let .corrupt(_, offset, what) = error as? ClosureError else { return false }
            return offset == 24 && what.contains("more than \(ClosureFile.maxExpansion) times its")
        }
        for arguments in [["verify", "--cache", cache], ["closure", "dump", path],
                          ["launch", app.bundle, "--root", app.root, "--cache", cache, "--mode", "auto"]] {
            let result = try await Self.measured(arguments)
            #expect(result.status != 137, "\(arguments[0]) was killed")
            #expect(result.peakResidentBytes < Self.bound, "\(arguments[0]): \(size)-byte closure claiming \(count) fixups: peak RSS \(result.peakResidentBytes >> 20) MB")
        }
    }

    /// A genuine body followed by 500 MiB of zeros: refused from the header, unexpanded.
    @Test func aBodyPaddedWithHundredsOfMegabytesIsRefusedUnexpanded() async throws {
        let app = try FixtureApp.named("basic")
        let cache = try Scratch.directory("bounded-padding")
        defer { Scratch.remove(cache) }
        let path = ClosureCache(directory: cache).closurePath(forApp: app.executable, arch: app.arch)
        var body = try app.closure().encodedBody()
        body += [UInt8](repeating: 0, count: 500 << 20)
        try Data(ClosureFile.wrapBody(body)).write(to: URL(fileURLWithPath: path))
        body = []
        #expect {
            _ = try ClosureFile.read(path)
        } throws: { error in
            guard case let .corrupt(_, _, what) = error as? ClosureError else { return false }
            return what.contains("no closure compresses that well")
        }
        let verify = try await Self.measured(["verify", "--cache", cache])
        #expect(verify.status == 3)
        #expect(verify.peakResidentBytes < Self.bound, "verify: peak RSS \(verify.peakResidentBytes >> 20) MB")
    }

    /// Small enough to pass the expansion cap: the run itself is refused, before its first
    /// entry, by every walk (verify, the launch's checks), as holding more locations than
    /// its segment has room for.
    @Test func aRunLongerThanItsSegmentIsRefusedBeforeItsEntries() async throws {
        let app = try FixtureApp.named("basic")
        let probe = try app.closure()
        let main = probe.rootCount - 1
        let data = try #require(probe.images[main].plan.segments.first { $0.name == "__DATA" })
        let capacity = data.vmSize / 4
        let closure = try Self.oneLongRun(app, count: Int(capacity) + 1)
        let cache = try Scratch.directory("bounded-run")
        defer { Scratch.remove(cache) }
        let path = ClosureCache(directory: cache).closurePath(forApp: app.executable, arch: app.arch)
        try ClosureFile.write(closure, to: path)
        let read = try ClosureFile.read(path)
        let expected = "claims \(capacity + 1) fixups, more than its segment has room for (\(capacity), one per 4 bytes)"
        #expect(read.consistencyProblems().contains { $0.contains(expected) }, "\(read.consistencyProblems())")
        #expect(ClosureVerification(checking: path).status == .corrupt)
        #expect {
            try read.checkFixups(ofImage: main)
        } throws: { error in
            (error as? ClosureError)?.fixupFault == .runLongerThanSegment(start: data.vmOffset, count: Int(capacity) + 1, capacity: capacity)
        }
        let refusal = try #require(ClosureRefusal.launchError(app, closurePath: path))
        #expect(refusal.kind == "invalid" && "\(refusal)".contains(expected))
        let result = try await Dyld3Binary.launchAuto(app, cache: cache)
        try ClosureRefusal.expectFallback(result, of: app) { $0.contains(expected) }
    }

    /// The same for an Objective-C write run: verify's stream stops at it, and the launch
    /// refuses it before its first store.
    @Test func anObjectiveCRunLongerThanItsSegmentIsRefused() async throws {
        let app = try FixtureApp.named("objc")
        var closure = try app.closure()
        let index = try #require(closure.objc.bindRuns.indices.first { !closure.objc.bindRuns[$0].isEmpty })
        let first = try #require(try closure.objcWrites(ofImage: index).first).vmOffset
        let segment = try #require(closure.images[index].plan.segments.first {
            $0.isWritable && first >= $0.vmOffset && first - $0.vmOffset < $0.vmSize
        })
        let capacity = segment.vmSize / 4
        var runs = LEB128.unsigned(1) + LEB128.unsigned(first) + LEB128.unsigned(capacity + 1) + LEB128.unsigned(0)
        runs += [UInt8](repeating: 0, count: 2 * Int(capacity + 1))
        closure.objc.bindRuns[index] = runs[...]
        closure.objc.bindCounts[index] = Int(capacity + 1)
        let decoded = try ClosureFile.decode(ClosureFile.encode(closure), path: "forged")
        let expected = "claims \(capacity + 1) fixups, more than its segment has room for (\(capacity), one per 4 bytes)"
        #expect(decoded.objcProblems().contains { $0.contains(expected) }, "\(decoded.objcProblems())")
        let cache = try Scratch.directory("bounded-objc")
        defer { Scratch.remove(cache) }
        let path = ClosureCache(directory: cache).closurePath(forApp: app.executable, arch: app.arch)
        try ClosureFile.write(closure, to: path)
        #expect(ClosureVerification(checking: path).status == .corrupt)
        let refusal = try #require(ClosureRefusal.launchError(app, closurePath: path))
        #expect(refusal.kind == "invalid" && "\(refusal)".contains(expected))
    }
}
