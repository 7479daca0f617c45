import ClosureBuild
@testable import Dyld3
import Foundation
@testable import ClosureCache
import LaunchPlan
import LoaderCore
import MachOReader
import Testing
import TestSupport
@testable import ClosureFormat
import LaunchMemory

/// The launch's second thread (``LaunchHelper``) and the decoding it shares: two zstd
/// frames for a large body, image records and bind targets read on two cores, fixups written
/// on two cores. Whatever runs
/// on the helper must give what the calling thread alone gives, and damaged frames must be
/// refused however they are split.
@Suite(.bounded) struct LaunchHelperTests {
    /// Work posted to the helper returns its result; a body that throws still waits for
    /// the helper; after `finish` the work runs inline, and finishing twice is harmless.
    /// A finished helper's thread is kept and serves the next helper; helpers taken at
    /// once get threads of their own.
    @Test func helperRunsWorkBesideTheBody() throws {
        struct Refused: Error {}
        for _ in 0..<3 {
            let helper = LaunchHelper(), other = LaunchHelper()
            #expect(!helper.isRunning)
            helper.start()
            other.start()
            #expect(helper.isRunning && other.isRunning)
            for round in 0..<50 {
                let (body, work) = LaunchHelper.run(on: helper, helper: { (0..<1000).reduce(round, +) }) { round * 2 }
                #expect(body == round * 2 && work == round + 499_500)
                let (otherBody, otherWork) = LaunchHelper.run(on: other, helper: { round + 1 }) {
                    LaunchHelper.run(on: helper, helper: { round + 2 }) { round + 3 }
                }
                #expect(otherBody == (round + 3, round + 2) && otherWork == round + 1)
            }
            #expect(throws: Refused.self) { try LaunchHelper.run(on: helper, helper: { 1 }) { () throws(Refused) in throw Refused() } }
            helper.finish()
            helper.finish()
            helper.start()
            #expect(!helper.isRunning, "a finished helper does not start again")
            let (body, work) = LaunchHelper.run(on: helper, helper: { "inline" }) { "body" }
            #expect(body == "body" && work == "inline")
            other.finish()
        }
        let (alone, aloneWork) = LaunchHelper.run(on: nil, helper: { 2 }) { 3 }
        #expect(alone == 3 && aloneWork == 2)
    }

    /// A body over the two-frame threshold: reproducible bytes from a fixed seed, mixed so
    /// zstd finds matches and literals alike.
    static let largeBody: [UInt8] = {
        var state: UInt64 = 0x9e37_79b9_7f4a_7c15
        return (0..<(UnsafeCompression.twoFrameThreshold + 44_445)).map { index in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return index % 7 == 0 ? UInt8(truncatingIfNeeded: state >> 56) : UInt8(truncatingIfNeeded: index / 64)
        }
    }()

    /// A large body is two frames, one per half, each as compressing that half alone gives;
    /// it decodes to the body with or without a helper; a small one stays one frame.
    @Test func largeBodiesAreTwoFramesDecodedAlike() throws {
        let body = Self.largeBody, middle = body.count / 2
        let first = UnsafeCompression.compress(Array(body[..<middle])), second = UnsafeCompression.compress(Array(body[middle...]))
        let frames = UnsafeCompression.compress(body)
        #expect(frames == first + second)
        let helper = LaunchHelper()
        helper.start()
        #expect(ClosureFrames(ByteView(frames), expectedSize: body.count).flatMap { ClosureLaunchDecoder.decompress($0, helper: helper) } == body)
        #expect(ClosureFrames(ByteView(frames), expectedSize: body.count)?.decompress() == body)
        let small = Array(body[..<1000])
        #expect(ClosureFrames(ByteView(UnsafeCompression.compress(small)), expectedSize: 1000).flatMap { ClosureLaunchDecoder.decompress($0, helper: helper) } == small)
    }

    /// Frames swapped, one missing, a third appended, the data cut short, a body size off
    /// by one either way: each refused, with and without a helper.
    @Test func damagedFramePairsAreRefused() throws {
        let body = Self.largeBody, middle = body.count / 2
        let first = UnsafeCompression.compress(Array(body[..<middle])), second = UnsafeCompression.compress(Array(body[middle...]))
        let cases: [(String, [UInt8], Int)] = [
            ("frames swapped", second + first, body.count),
            ("second frame missing", first, body.count),
            ("first frame missing", second, body.count),
            ("a third frame", first + second + second, body.count),
            ("last byte cut", Array((first + second).dropLast()), body.count),
            ("body one byte longer", first + second, body.count + 1),
            ("body one byte shorter", first + second, body.count - 1),
        ]
        #expect(body.count % 2 == 1, "odd, so swapped frames put the longer half first")
        let helper = LaunchHelper()
        helper.start()
        for (name, data, size) in cases {
            #expect(ClosureFrames(ByteView(data), expectedSize: size).flatMap { ClosureLaunchDecoder.decompress($0, helper: helper) } == nil, "\(name)")
            #expect(ClosureFrames(ByteView(data), expectedSize: size)?.decompress() == nil, "\(name)")
        }
    }

    /// A helper with its thread running.
    static func startedHelper() -> LaunchHelper {
        let helper = LaunchHelper()
        helper.start()
        return helper
    }

    /// The closure of the generated 100-framework app (`make test` generates it).
    static func gen100Closure() throws -> LaunchClosure {
        let base = Paths.repoRoot.appendingPathComponent("build/demo-gen100").path
        let executable = base + "/gen100.app/gen100"
        try #require(FileManager.default.fileExists(atPath: executable), "run tools/gen-app --preset 100 --seed 1 --out build/demo-gen100")
        let closure = try ClosureBuilder.build(roots: [executable], arch: "x86_64", root: base + "/root")
        #expect(closure.images.count > 100)
        return closure
    }

    /// A reader of `body` standing at its first image record (binding, content-only byte,
    /// root count, shared cache and image count read).
    static func readerAtRecords(of body: [UInt8]) throws -> ClosureReader {
        var reader = ClosureReader(body, path: "")
        _ = try ClosureBinding(parsing: &reader)
        _ = try reader.u64()
        _ = try reader.u8()
        _ = try reader.uleb()
        if try reader.u8() != 0 {
            _ = try reader.string()
            _ = try reader.raw(16)
        }
        _ = try reader.uleb()
        return reader
    }

    /// The generated 100-framework app's closure decodes to the closure it encodes with a
    /// running helper (which reads part of the records and the bind targets) and without
    /// one; an image record with a byte after its last field is refused both ways, naming
    /// that image.
    @Test func largeClosureDecodesAlikeOnTwoCores() throws {
        let closure = try Self.gen100Closure()
        let file = ClosureFile.encode(closure)
        #expect(try ClosureLaunchDecoder.decode(ByteView(file), path: "gen100", helper: Self.startedHelper()) { _ throws(ClosureError) in }.closure == closure)
        #expect(try ClosureFile.decode(file, path: "gen100") == closure)

        // The last image's record, with one byte more inside its length.
        let body = closure.encodedBody()
        var reader = try Self.readerAtRecords(of: body)
        for _ in 1..<closure.images.count { _ = try reader.blobRange() }
        let lastStart = reader.position
        var record = ClosureWriter()
        record.blob(try reader.blob() + [0])
        let forged = Array(body[..<lastStart]) + record.bytes + Array(body[reader.position...])
        for helper in [Self.startedHelper(), nil] {
            #expect {
                try ClosureLaunchDecoder.decode(ByteView(ClosureFile.wrapBody(forged)), path: "forged", helper: helper) { _ throws(ClosureError) in }
            } throws: { error in
                "\(error)".contains("bytes after the record of image \(closure.images[closure.images.count - 1].path)")
            }
        }
    }
    /// Every fixup of the generated 100-framework app written on two threads (the helper
    /// writes the second part of the images) leaves the memory one thread leaves, byte for
    /// byte at one slide. A bind run forged to name a target past the table in the last
    /// image (the helper's part) is refused naming that image; forged in the first image too,
    /// the first image's error is reported, as with one thread.
    @Test func fixupsWrittenOnTwoCoresAlike() throws {
        let closure = try Self.gen100Closure()
        let slide: UInt64 = 0x6700_0000_0000
        func launch(_ closure: LaunchClosure, helper: LaunchHelper?) throws -> [LaunchMemory.SegmentSnapshot] {
            let memory = try LaunchMemory(plans: closure.images.map(\.plan), firstSlide: slide)
            defer { memory.release() }
            try FastPath.applyFixups(closure, images: Array(closure.images.indices), memory: memory,
                                     targetValues: closure.bindTargetValues(memory), closurePath: "gen100", helper: helper)
            return memory.writableSnapshot()
        }
        let alone = try launch(closure, helper: nil)
        let helper = Self.startedHelper()
        #expect(helper.isRunning)
        let twoCores = try launch(closure, helper: helper)
        #expect(alone.count == twoCores.count && alone.count > closure.images.count)
        #expect(zip(alone, twoCores).allSatisfy { $0.bytes == $1.bytes && $0.image == $1.image && $0.vmOffset == $1.vmOffset },
                "the memory written on two cores differs")

        // A bind at the start of an image's first writable segment, its target past the table.
        func forged(_ closure: inout LaunchClosure, image: Int) throws {
            let segment = try #require(closure.images[image].plan.segments.first { $0.isWritable && $0.vmSize >= 8 })
            var runs = ClosureWriter()
            runs.uleb(1)
            runs.uleb(Int(segment.vmOffset))
            runs.uleb(1)
            runs.uleb(0)
            runs.uleb(closure.bindTargets.count + 5)
            runs.sleb(0)
            closure.images[image].bindRuns = runs.bytes[...]
        }
        let (first, last) = (0, closure.images.count - 1)
        var lastForged = closure
        try forged(&lastForged, image: last)
        var bothForged = lastForged
        try forged(&bothForged, image: first)
        for helper in [Self.startedHelper(), nil] {
            #expect { try launch(lastForged, helper: helper) } throws: { error in
                "\(error)".contains(closure.images[last].path) && "\(error)".contains("past the table")
            }
            #expect { try launch(bothForged, helper: helper) } throws: { error in
                "\(error)".contains(closure.images[first].path) && !"\(error)".contains(closure.images[last].path)
            }
        }
    }

    /// With the helper running, the launch thread opens the first quarter of the images and
    /// the helper the rest, handing each over as the launch thread maps: the launch leaves
    /// the memory of a launch that opened every image first, byte for byte at one slide, and
    /// counts the images hashed on both threads. An image of the helper's part that is no
    /// longer the file the closure names is reported, naming it, and nothing is left mapped.
    @Test func imagesOpenedOnTheHelperAsTheyAreMapped() throws {
        let closure = try Self.gen100Closure()
        let root = Paths.repoRoot.appendingPathComponent("build/demo-gen100").path
        let slide: UInt64 = 0x6800_0000_0000
        let request = LaunchOptions(roots: [root + "/gen100.app/gen100"], arch: "x86_64", root: root + "/root", slide: slide, run: false)
        func launch(_ closure: LaunchClosure, helper: LaunchHelper?, alwaysHash: Bool = false) throws -> (snapshot: [LaunchMemory.SegmentSnapshot], hashed: Int?) {
            let configuration = LaunchConfiguration(alwaysHashContent: alwaysHash)
            let first = FastPath.openedBeforeMapping(closure.images.count, helper: helper)
            var hashed = 0
            let files = try closure.openImages(0..<first, closurePath: "gen100", checks: IdentityChecks(alwaysHash: alwaysHash),
                                               hashedImages: &hashed)
            let launched = try Launcher.run(ClosureLaunchSource(.decoded(closure, path: "gen100", opened: (files, hashed))), request: request,
                                            configuration: configuration, helper: helper)
            defer { launched.memory.release() }
            return (launched.memory.writableSnapshot(), launched.report.imagesHashed)
        }
        let helper = Self.startedHelper()
        #expect(FastPath.openedBeforeMapping(closure.images.count, helper: helper) == closure.images.count / 4)
        #expect(FastPath.openedBeforeMapping(closure.images.count, helper: nil) == closure.images.count)
        let alone = try launch(closure, helper: nil)
        let twoCores = try launch(closure, helper: helper)
        #expect(alone.snapshot.count == twoCores.snapshot.count && alone.snapshot.count > closure.images.count)
        #expect(zip(alone.snapshot, twoCores.snapshot).allSatisfy { $0.bytes == $1.bytes && $0.vmOffset == $1.vmOffset },
                "the memory of a launch whose images were handed over differs")
        #expect(try launch(closure, helper: Self.startedHelper(), alwaysHash: true).hashed == closure.images.count)

        let stale = closure.images.count - 3
        var forged = closure
        forged.images[stale].identity.size += 1
        let regionBase = closure.images[0].plan.preferredBase &+ slide
        for helper in [Self.startedHelper(), nil] {
            #expect {
                _ = try launch(forged, helper: helper)
            } throws: { error in
                "\(error)".contains(closure.images[stale].path) && "\(error)".contains("changed size")
            }
            #expect(try !ProcessMaps.anyMapping(in: regionBase..<(regionBase + 0x1000)), "the refused launch left its region mapped")
        }
    }

    /// A launch reads the image records, then opens the images (`beside`) while the helper
    /// reads the bind targets and the rest: the closure it gets is the one encoded, `beside`
    /// sees its images, binding and roots; with a damaged bind-target table the table's
    /// error comes first, whatever `beside` throws, with a helper and without one.
    @Test func theRestOfTheBodyIsReadBesideTheImageTable() throws {
        let closure = try Self.gen100Closure()
        let file = ClosureFile.encode(closure)
        for helper in [Self.startedHelper(), nil] {
            let (decoded, table) = try ClosureLaunchDecoder.decode(ByteView(file), path: "gen100", helper: helper) { table throws(ClosureError) in table }
            #expect(decoded == closure)
            #expect(table.images == closure.images && table.binding == closure.binding && table.rootCount == closure.rootCount)
        }

        // The first bind target's kind byte says 0x7f, a kind no target has.
        let body = closure.encodedBody()
        var reader = try Self.readerAtRecords(of: body)
        for _ in 0..<closure.images.count { _ = try reader.blobRange() }
        #expect(try reader.uleb() > 0)
        var forged = body
        forged[reader.position] = 0x7f
        let forgedFile = ClosureFile.wrapBody(forged)
        for helper in [Self.startedHelper(), nil] {
            var besideRan = false
            #expect {
                try ClosureLaunchDecoder.decode(ByteView(forgedFile), path: "forged", helper: helper) { _ throws(ClosureError) in
                    besideRan = true
                    throw ClosureError.missing(path: "beside")
                }
            } throws: { error in
                "\(error)".contains("forged") && !"\(error)".contains("beside")
            }
            #expect(besideRan == (helper != nil), "beside runs beside the rest only with a running helper")
        }
    }
}
