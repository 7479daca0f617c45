import MachOReader
@testable import Dyld3
import Foundation
@testable import ClosureCache
import LoaderCore
import TestSupport
import Testing
import LaunchPlan
@testable import ClosureFormat
import Pager
import LaunchMemory

/// Damaged and forged closures of a multi-image app: every damage is detected by the
/// checksum or the structure checks, every forgery with a valid checksum is refused before
/// anything is written, and nothing crashes.
@Suite(.serialized, .bounded) struct TamperTests {
    static let appName = "init-order"
    /// A slide that puts the launch region where nothing else lives, so its absence from
    /// /proc/self/maps after a refused launch is meaningful: above where launches without a
    /// slide land (`LaunchMemory`: 0x1000_0000_0000 to 0x5000_0000_0000), and apart from the
    /// other suites' fixed slides, since suites run at once.
    static let slide: UInt64 = 0x6600_0000_0000

    // MARK: damage

    @Test func everyByteFlipAndEveryTruncationIsDetected() throws {
        let app = try FixtureApp.named(Self.appName)
        let closure = try app.closure()
        #expect(closure.images.count >= 4)
        let file = ClosureFile.encode(closure)
        #expect(try ClosureFile.decode(file, path: "intact") == closure)
        let masks: [UInt8] = [0x01, 0x10, 0x80, 0xff]
        var flips = 0, truncations = 0
        var undetected: [String] = []
        for offset in file.indices {
            for mask in masks {
                var damaged = file
                damaged[offset] ^= mask
                flips += 1
                if let reason = Self.acceptedOrWrongKind(damaged) { undetected.append("flip 0x\(String(mask, radix: 16)) at \(offset): \(reason)") }
            }
        }
        for length in 0..<file.count {
            truncations += 1
            if let reason = Self.acceptedOrWrongKind(Array(file.prefix(length))) { undetected.append("truncated to \(length): \(reason)") }
        }
        #expect(undetected.isEmpty, "\(undetected.prefix(10))")
        #expect(flips == file.count * masks.count && flips > 2000)
        #expect(truncations == file.count)
        print("tamper: \(flips) byte flips and \(truncations) truncations of a \(file.count)-byte closure of \(closure.images.count) images: all corrupt")
    }

    /// nil when `decode` refuses `bytes` as corrupt, else what went wrong.
    static func acceptedOrWrongKind(_ bytes: [UInt8]) -> String? {
        do {
            _ = try ClosureFile.decode(bytes, path: "damaged")
            return "accepted"
        } catch {
            return error.kind == "corrupt" ? nil : "refused as \(error.kind)"
        }
    }

    /// `auto` falls back to dyld2 with the reason "corrupt" and still gives the right result.
    @Test func autoModeFallsBackOnDamagedClosures() async throws {
        let app = try FixtureApp.named(Self.appName)
        let cache = try Scratch.directory("tamper-auto")
        defer { Scratch.remove(cache) }
        let path = try app.install(into: cache)
        let file = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        var damages: [(String, [UInt8])] = []
        for offset in [0, 7, 8, 16, 20, 24, 32, 40, file.count / 2, file.count - 1] {
            var damaged = file
            damaged[offset] ^= 0xff
            damages.append(("flip at \(offset)", damaged))
        }
        for length in [0, 39, 40, file.count / 2, file.count - 1] { damages.append(("truncated to \(length)", Array(file.prefix(length)))) }
        let expected = try app.expectedResult
        for (name, bytes) in damages {
            Scratch.remove(path)
            #expect(FileManager.default.createFile(atPath: path, contents: Data(bytes), attributes: [.posixPermissions: 0o644]))
            let result = try await Dyld3Binary.launchAuto(app, cache: cache)
            let report = try #require(result.json, "\(name): \(result.stderr)")
            #expect(report["mode"] as? String == "dyld2", "\(name)")
            #expect((report["fallback_reason"] as? String)?.hasPrefix("corrupt: ") == true, "\(name): \(report["fallback_reason"] ?? "nil")")
            #expect((report["result"] as? NSNumber)?.int32Value == expected, "\(name)")
        }
        #expect(damages.count == 15)
    }

    // MARK: forgeries refused when the closure is read

    /// One change to a decoded closure, encoded again with a valid checksum.
    struct Forgery: CustomStringConvertible, Sendable {
        let description: String
        let forge: @Sendable (inout LaunchClosure) -> Void

        /// Expects `closure`, forged and encoded, to be refused when it is read.
        func expectRefusedWhenRead(_ closure: LaunchClosure) {
            var closure = closure
            forge(&closure)
            let file = ClosureFile.encode(closure)
            #expect(throws: ClosureError.self, "\(self)") { try ClosureFile.decode(file, path: "forged") }
        }
    }

    static let decodeForgeries: [Forgery] = [
        Forgery(description: "two segments of an image overlap") { c in
            c.images[1].plan.segments[1].vmOffset = c.images[1].plan.segments[0].vmOffset
        },
        Forgery(description: "segment past its image's vm size") { c in
            let last = c.images[1].plan.segments.count - 1
            c.images[1].plan.segments[last].vmSize = c.images[1].plan.vmSize + 0x1000
        },
        Forgery(description: "segment mapping bytes past the end of the file") { c in
            c.images[2].plan.segments[0].fileOffset = c.images[2].identity.size
        },
        Forgery(description: "segment mapping more file bytes than its size") { c in
            c.images[2].plan.segments[0].fileSize = c.images[2].plan.segments[0].vmSize + 1
        },
        Forgery(description: "image claiming 2^41 bytes of address space") { c in
            c.images[1].plan.vmSize = 1 << 41
        },
        Forgery(description: "bind target in an image index out of range") { c in
            c.bindTargets[0] = .image(c.images.count, offset: 0)
        },
        Forgery(description: "bind target offset outside its image") { c in
            c.bindTargets[0] = .image(1, offset: c.images[1].plan.vmSize)
        },
        Forgery(description: "bind target offset 2^64 - 1") { c in
            c.bindTargets[0] = .image(0, offset: .max)
        },
        Forgery(description: "initializer order naming an image out of range") { c in
            c.initializerOrder.append(c.images.count)
        },
        Forgery(description: "dependency resolved to an image out of range") { c in
            c.images[0].dependencies[0].target = c.images.count
        },
        Forgery(description: "root count 0") { c in c.rootCount = 0 },
        Forgery(description: "root count over the image count") { c in c.rootCount = c.images.count + 1 },
        Forgery(description: "rebase count 2^40") { c in c.images[1].rebaseCount = 1 << 40 },
        Forgery(description: "bind count 2^62") { c in c.images[1].bindCount = 1 << 62 },
        Forgery(description: "initializer outside every executable segment") { c in
            c.images[1].initializers = [c.images[1].plan.vmSize + 0x10]
        },
        Forgery(description: "entry point outside the main image") { c in c.entryOffset = 1 << 40 },
        Forgery(description: "fixup page in the image's __TEXT") { c in forgePageIndex(&c) { $0[0].page = 0 } },
        Forgery(description: "fixup page past the image's end") { c in forgePageIndex(&c) { $0[$0.count - 1].page = 1 << 40 } },
        Forgery(description: "fixup page restart offset past its run stream") { c in
            forgePageIndex(&c) { pages in
                if pages[0].rebases.runs > 0 { pages[0].rebases.offset = 1 << 30 } else { pages[0].binds.offset = 1 << 30 }
            }
        },
        Forgery(description: "fixup page with more runs than the stream holds") { c in
            forgePageIndex(&c) { pages in
                if pages[0].rebases.runs > 0 { pages[0].rebases.runs += 1 << 20 } else { pages[0].binds.runs += 1 << 20 }
            }
        },
        Forgery(description: "fixup page with no runs") { c in forgePageIndex(&c) { $0[0].rebases = .none; $0[0].binds = .none } },
        Forgery(description: "fixup page index with page size 4095") { c in
            let index = c.images.firstIndex { $0.fixupPageIndex.bytes.count > 2 }!
            let pages = try! c.images[index].fixupPageIndex.pages(path: "").pages
            c.images[index].fixupPageIndex = FixupPageIndex(pages: pages, pageSize: 4095)
        },
    ]

    /// Rewrites the page index of the first image that has indexed pages.
    static func forgePageIndex(_ c: inout LaunchClosure, _ change: (inout [FixupPage]) -> Void) {
        let index = c.images.firstIndex { $0.fixupPageIndex.bytes.count > 2 }!
        var pages = try! c.images[index].fixupPageIndex.pages(path: "").pages
        change(&pages)
        c.images[index].fixupPageIndex = FixupPageIndex(pages: pages)
    }

    @Test(arguments: decodeForgeries)
    func forgeryRefusedWhenRead(_ forgery: Forgery) throws {
        let closure = try FixtureApp.named(Self.appName).closure()
        #expect(!closure.bindTargets.isEmpty && !closure.images[0].dependencies.isEmpty)
        forgery.expectRefusedWhenRead(closure)
    }

    /// Bodies no builder writes, with absurd counts and sizes, each framed with a valid checksum.
    static let absurdBodies: [(String, [UInt8])] = {
        var prefix = ClosureWriter()
        prefix.string(LaunchClosure.builderIdentity)
        prefix.string("x86_64")
        prefix.string("")
        prefix.u8(0)
        prefix.uleb(1)
        var hugeImages = prefix
        hugeImages.uleb(UInt64(1) << 60)
        var hugeString = ClosureWriter()
        hugeString.uleb(UInt64(1) << 62)
        var overlongLEB = ClosureWriter()
        overlongLEB.string("b")
        overlongLEB.string("x86_64")
        overlongLEB.string("")
        overlongLEB.u8(0)
        for _ in 0..<11 { overlongLEB.u8(0xff) }
        overlongLEB.u8(1)
        return [
            ("image count 2^60", hugeImages.bytes), ("string length 2^62", hugeString.bytes),
            ("a LEB128 over 64 bits", overlongLEB.bytes), ("an empty body", []),
        ]
    }()

    @Test func absurdCountsAndSizesAreRefused() throws {
        for (name, body) in Self.absurdBodies {
            let file = Self.frame(UnsafeCompression.compress(body), bodySize: UInt64(body.count))
            #expect(throws: ClosureError.self, "\(name)") { try ClosureFile.decode(file, path: "forged") }
        }
        #expect(Self.absurdBodies.count == 4)
    }

    /// A closure file around `frame` with a valid checksum.
    static func frame(_ frame: [UInt8], bodySize: UInt64) -> [UInt8] {
        var fields = ClosureWriter()
        fields.u64(UInt64(LaunchClosure.formatVersion))
        fields.u64(bodySize)
        fields.u64(UInt64(frame.count))
        var file = ClosureFileHeader.magic + [UInt8](repeating: 0, count: 8) + fields.bytes + frame
        let checksum = UnsafeHash.xxh3(file[16...])
        for index in 0..<8 { file[8 + index] = UInt8(truncatingIfNeeded: checksum >> (8 * UInt64(index))) }
        return file
    }

    @Test func decompressionBombsAreRefused() throws {
        let app = try FixtureApp.named(Self.appName)
        let body = try app.closure().encodedBody()
        let goodFrame = UnsafeCompression.compress(body)
        #expect(try ClosureFile.decode(Self.frame(goodFrame, bodySize: UInt64(body.count)), path: "good").images.count >= 4)
        // 64 MiB of zeros compress to a few KiB.
        let bomb = UnsafeCompression.compress([UInt8](repeating: 0, count: 64 << 20))
        #expect(bomb.count < 64 << 10)
        var cases: [(String, [UInt8])] = [
            ("declared body 512 MiB + 1", Self.frame(goodFrame, bodySize: UInt64(ClosureFile.maxBodySize) + 1)),
            ("declared body 2^64 - 1", Self.frame(goodFrame, bodySize: .max)),
            ("declared body one byte short of the frame's", Self.frame(goodFrame, bodySize: UInt64(body.count) - 1)),
            ("64 MiB frame, header declares 1000 bytes", Self.frame(bomb, bodySize: 1000)),
        ]
        // The same frame with its own content size rewritten to 1000: the header agrees, the
        // frame expands past it, and decompression must stop at 1000 bytes.
        if let lying = Self.rewritingContentSize(of: bomb, to: 1000) {
            cases.append(("64 MiB frame declaring 1000 bytes in its own header", Self.frame(lying, bodySize: 1000)))
        }
        #expect(cases.count == 5)
        for (name, file) in cases {
            #expect(throws: ClosureError.self, "\(name)") { try ClosureFile.decode(file, path: "bomb") }
        }
    }

    /// `frame` with its frame-content-size field set to `size` (zstd frame header: magic,
    /// descriptor byte, optional window byte, dictionary id, then the content size).
    static func rewritingContentSize(of frame: [UInt8], to size: UInt64) -> [UInt8]? {
        guard frame.count > 6 else { return nil }
        let descriptor = frame[4]
        let singleSegment = descriptor & 0x20 != 0
        let dictionaryBytes = [0, 1, 2, 4][Int(descriptor & 3)]
        let sizeBytes = [singleSegment ? 1 : 0, 2, 4, 8][Int(descriptor >> 6)]
        guard sizeBytes >= 4 else { return nil }
        let start = 5 + (singleSegment ? 0 : 1) + dictionaryBytes
        var patched = frame
        for index in 0..<sizeBytes { patched[start + index] = UInt8(truncatingIfNeeded: size >> (8 * UInt64(index))) }
        return patched
    }

    // MARK: forgeries refused when applied, before any write

    /// Run streams (decoded only as they are applied) that point where no fixup may go.
    enum RunForgery: String, CaseIterable, CustomStringConvertible, Sendable {
        case locationPastTheImage, locationInAnotherImage, locationInReadOnlyText, locationStraddlingSegmentEnd,
             locationNearTwoToThe64, strideOverflowingTheSpan, runPastTheSegment, runCount2To40,
             fixupCount2To40, rebaseTargetOutsideTheImage, rebaseTargetOutsideWithHigh8, bindTargetPastTheTable,
             bindRunInAnotherImage
        var description: String { rawValue }
    }

    /// The forged run bytes for image `index`, laid out in `memory`; and whether they are binds.
    static func runs(_ forgery: RunForgery, image index: Int, closure: LaunchClosure, memory: LaunchMemory) throws -> (bytes: [UInt8], binds: Bool) {
        let plan = closure.images[index].plan
        let writable = try #require(plan.segments.first { $0.isWritable && $0.vmSize >= 16 })
        let other = memory.images[index + 1]
        let otherWritable = try #require(other.plan.segments.first { $0.isWritable && $0.vmSize >= 16 })
        let intoOther = other.base &- memory.images[index].base &+ otherWritable.vmOffset
        func run(_ start: UInt64, count: UInt64, stride: UInt64, entries: [UInt8]) -> [UInt8] {
            LEB128.unsigned(1) + LEB128.unsigned(start) + LEB128.unsigned(count) + LEB128.unsigned(stride) + entries
        }
        let rebase = LEB128.signed(0x10)
        switch forgery {
        case .locationPastTheImage: return (run(plan.vmSize + 0x100, count: 1, stride: 0, entries: rebase), false)
        case .locationInAnotherImage: return (run(intoOther, count: 1, stride: 0, entries: rebase), false)
        case .locationInReadOnlyText: return (run(0, count: 1, stride: 0, entries: rebase), false)
        case .locationStraddlingSegmentEnd:
            return (run(writable.vmOffset + writable.vmSize - 4, count: 1, stride: 0, entries: rebase), false)
        case .locationNearTwoToThe64: return (run(.max - 3, count: 1, stride: 0, entries: rebase), false)
        case .strideOverflowingTheSpan: return (run(writable.vmOffset, count: 2, stride: 1 << 63, entries: rebase + rebase), false)
        case .runPastTheSegment:
            let count = writable.vmSize / 8 + 1
            return (run(writable.vmOffset, count: count, stride: 8, entries: [UInt8](repeating: 0, count: Int(count))), false)
        case .runCount2To40: return (LEB128.unsigned(1 << 40) + LEB128.unsigned(writable.vmOffset) + [1, 0, 0], false)
        case .fixupCount2To40: return (run(writable.vmOffset, count: 1 << 40, stride: 8, entries: rebase), false)
        case .rebaseTargetOutsideTheImage: return (run(writable.vmOffset, count: 1, stride: 0, entries: LEB128.signed(Int64(plan.vmSize))), false)
        case .rebaseTargetOutsideWithHigh8:
            return (run(writable.vmOffset, count: 1, stride: 0, entries: LEB128.signed(Int64(bitPattern: 0x8000_0000_0000_0000 | plan.vmSize))), false)
        case .bindTargetPastTheTable:
            return (run(writable.vmOffset, count: 1, stride: 0, entries: LEB128.unsigned(UInt64(closure.bindTargets.count)) + LEB128.signed(0)), true)
        case .bindRunInAnotherImage: return (run(intoOther, count: 1, stride: 0, entries: LEB128.unsigned(0) + LEB128.signed(0)), true)
        }
    }

    static func snapshot(_ memory: LaunchMemory) -> [[UInt8]] {
        memory.images.flatMap { image in
            image.plan.segments.map { segment in
                let start = UnsafeRawPointer(bitPattern: UInt(image.base + segment.vmOffset))
                return [UInt8](UnsafeRawBufferPointer(start: start, count: Int(segment.vmSize)))
            }
        }
    }

    @Test(arguments: RunForgery.allCases)
    func forgedRunRefusedBeforeAnyWrite(_ forgery: RunForgery) throws {
        var closure = try FixtureApp.named(Self.appName).closure()
        let memory = try LaunchMemory(plans: closure.images.map(\.plan), firstSlide: nil)
        defer { memory.release() }
        let index = 0
        let (bytes, binds) = try Self.runs(forgery, image: index, closure: closure, memory: memory)
        closure.images[index].rebaseRuns = binds ? [0] : bytes[...]
        closure.images[index].bindRuns = binds ? bytes[...] : [0]
        closure.images[index].fixupPageIndex = .absent
        // The file is accepted (runs are checked as they are applied) ...
        let decoded = try ClosureFile.decode(ClosureFile.encode(closure), path: "forged")
        #expect(decoded == closure)
        // ... and applying it writes nothing anywhere: every mapped byte is as mapped.
        let before = Self.snapshot(memory)
        #expect(throws: ClosureError.self, "\(forgery)") {
            try decoded.applyFixups(ofImage: index, memory: memory, targetValues: decoded.bindTargetValues(memory), closurePath: "forged")
        }
        #expect(Self.snapshot(memory) == before, "\(forgery) wrote into mapped memory")
    }

    /// The whole fast path on forged closure files: the launch throws, and its region is
    /// unmapped (no mapping left at the forced slide).
    @Test(arguments: [RunForgery.locationPastTheImage, .locationInAnotherImage, .rebaseTargetOutsideTheImage, .bindTargetPastTheTable])
    func fastPathLeavesNoMappingBehind(_ forgery: RunForgery) throws {
        let app = try FixtureApp.named(Self.appName)
        var closure = try app.closure()
        let region = (closure.images[0].plan.preferredBase + Self.slide)..<(closure.images[0].plan.preferredBase + Self.slide + (1 << 32))
        #expect(try !ProcessMaps.anyMapping(in: region))
        let layout = try LaunchMemory(plans: closure.images.map(\.plan), firstSlide: Self.slide)
        #expect(try ProcessMaps.anyMapping(in: region))
        let (bytes, binds) = try Self.runs(forgery, image: 0, closure: closure, memory: layout)
        layout.release()
        #expect(try !ProcessMaps.anyMapping(in: region))
        closure.images[0].rebaseRuns = binds ? [0] : bytes[...]
        closure.images[0].bindRuns = binds ? bytes[...] : [0]
        closure.images[0].fixupPageIndex = .absent
        let cache = try Scratch.directory("tamper-fast")
        defer { Scratch.remove(cache) }
        let path = ClosureCache(directory: cache).closurePath(forApp: app.executable, arch: app.arch)
        try ClosureFile.write(closure, to: path)
        #expect(throws: ClosureError.self, "\(forgery)") {
            _ = try FastPath.launch(closurePath: path, request: LaunchOptions(roots: [app.executable], arch: app.arch, root: app.root, slide: Self.slide))
        }
        #expect(try !ProcessMaps.anyMapping(in: region), "\(forgery) left a mapping behind")
    }
}
