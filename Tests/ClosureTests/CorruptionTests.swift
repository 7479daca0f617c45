import TestSupport
import Foundation
@testable import ClosureCache
import LoaderCore
import MachOReader
import Testing
import LaunchPlan
@testable import ClosureFormat

/// A damaged closure file and what the reader must say about it.
struct Damage: CustomStringConvertible, Sendable {
    let name: String
    /// `ClosureError.kind` from `ClosureFile.decode` / `read`.
    let kind: String
    /// `ClosureVerification.Status` from `dyld3 verify`.
    let status: ClosureVerification.Status
    let apply: @Sendable ([UInt8]) -> [UInt8]
    var description: String { name }

    static func flip(_ offset: @escaping @Sendable ([UInt8]) -> Int) -> @Sendable ([UInt8]) -> [UInt8] {
        { file in
            var file = file
            file[offset(file)] ^= 0xff
            return file
        }
    }

    /// Sets header field bytes, then recomputes the checksum so that the field itself is what fails.
    static func header(_ offset: Int, _ value: UInt64, width: Int) -> @Sendable ([UInt8]) -> [UInt8] {
        { file in
            var file = file
            for index in 0..<width { file[offset + index] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(index))) }
            return ClosureTests.withChecksum(file)
        }
    }

    static let all: [Damage] = [
        Damage(name: "magic byte flipped", kind: "corrupt", status: .notAClosure, apply: flip { _ in 1 }),
        Damage(name: "version byte flipped", kind: "corrupt", status: .corrupt, apply: flip { _ in 16 }),
        Damage(name: "flags byte flipped", kind: "corrupt", status: .corrupt, apply: flip { _ in 20 }),
        Damage(name: "body size byte flipped", kind: "corrupt", status: .corrupt, apply: flip { _ in 24 }),
        Damage(name: "frame size byte flipped", kind: "corrupt", status: .corrupt, apply: flip { _ in 39 }),
        Damage(name: "first checksum byte flipped", kind: "corrupt", status: .corrupt, apply: flip { _ in 8 }),
        Damage(name: "last checksum byte flipped", kind: "corrupt", status: .corrupt, apply: flip { _ in 15 }),
        Damage(name: "first frame byte flipped", kind: "corrupt", status: .corrupt, apply: flip { _ in 40 }),
        Damage(name: "middle frame byte flipped", kind: "corrupt", status: .corrupt, apply: flip { 40 + ($0.count - 40) / 2 }),
        Damage(name: "last frame byte flipped", kind: "corrupt", status: .corrupt, apply: flip { $0.count - 1 }),
        Damage(name: "truncated to 0 bytes", kind: "corrupt", status: .corrupt, apply: { _ in [] }),
        Damage(name: "truncated to 5 bytes", kind: "corrupt", status: .corrupt, apply: { Array($0.prefix(5)) }),
        Damage(name: "truncated to 16 bytes", kind: "corrupt", status: .corrupt, apply: { Array($0.prefix(16)) }),
        Damage(name: "truncated to 39 bytes", kind: "corrupt", status: .corrupt, apply: { Array($0.prefix(39)) }),
        Damage(name: "truncated to the header", kind: "corrupt", status: .corrupt, apply: { Array($0.prefix(40)) }),
        Damage(name: "truncated to 41 bytes", kind: "corrupt", status: .corrupt, apply: { Array($0.prefix(41)) }),
        Damage(name: "truncated to half", kind: "corrupt", status: .corrupt, apply: { Array($0.prefix($0.count / 2)) }),
        Damage(name: "last byte cut", kind: "corrupt", status: .corrupt, apply: { Array($0.dropLast()) }),
        Damage(name: "truncated, checksum recomputed", kind: "corrupt", status: .corrupt, apply: { ClosureTests.withChecksum(Array($0.dropLast(3))) }),
        Damage(name: "a byte appended", kind: "corrupt", status: .corrupt, apply: { $0 + [0] }),
        Damage(name: "a newer version with a valid checksum", kind: "incompatible", status: .incompatible,
               apply: header(16, UInt64(LaunchClosure.formatVersion + 1), width: 4)),
        Damage(name: "version 0 with a valid checksum", kind: "incompatible", status: .incompatible, apply: header(16, 0, width: 4)),
        Damage(name: "body size off by one with a valid checksum", kind: "corrupt", status: .corrupt,
               apply: { header(24, ClosureFileHeader(fieldsOf: $0).bodySize + 1, width: 8)($0) }),
        Damage(name: "huge body size with a valid checksum", kind: "corrupt", status: .corrupt, apply: header(24, UInt64.max, width: 8)),
        Damage(name: "frame size off by one with a valid checksum", kind: "corrupt", status: .corrupt,
               apply: { header(32, ClosureFileHeader(fieldsOf: $0).frameSize - 1, width: 8)($0) }),
    ]
}

extension ClosureTests {
    /// The file bytes of a closure that launches, with several images and both fixup kinds.
    static func sampleClosure() throws -> (app: FixtureApp, closure: LaunchClosure, file: [UInt8]) {
        let app = try #require(launchable.first { $0.name == "basic" && $0.variant == "x86_64-chained" })
        let closure = try app.closure()
        return (app, closure, ClosureFile.encode(closure))
    }

    /// `file` with its checksum recomputed over bytes 16..end.
    static func withChecksum(_ file: [UInt8]) -> [UInt8] {
        guard file.count >= 16 else { return file }
        var file = file
        let checksum = UnsafeHash.xxh3(file[16...])
        for index in 0..<8 { file[8 + index] = UInt8(truncatingIfNeeded: checksum >> (8 * UInt64(index))) }
        return file
    }

    /// A closure file around `body`, with a correct header and checksum: a body under 4 KiB
    /// stored as it is (flags bit 2), a larger one in zstd frames.
    static func file(body: [UInt8], version: UInt32 = LaunchClosure.formatVersion) -> [UInt8] {
        let stored = body.count < 4096
        let frame = stored ? body : UnsafeCompression.compress(body)
        var file = Array("DYLD3CL\u{0}".utf8) + [UInt8](repeating: 0, count: 8)
        for (value, width) in [(UInt64(version) | (stored ? 4 << 32 : 0), 8), (UInt64(body.count), 8), (UInt64(frame.count), 8)] {
            for index in 0..<width { file.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(index)))) }
        }
        return withChecksum(file + frame)
    }

    /// A body under 4 KiB is stored as it is and one of 4 KiB or more is compressed; both read
    /// back, and a stored body whose size disagrees with the file's is refused.
    @Test func smallBodiesAreStoredAndLargerOnesCompressed() throws {
        for size in [0, 1, 4095, 4096, 300_000] {
            let body = (0..<size).map { UInt8(truncatingIfNeeded: $0 * 7 / 3) }
            let file = ClosureFile.wrapBody(body)
            let header = ClosureFileHeader(fieldsOf: file)
            #expect((header.flags & ClosureFileHeader.storedFlag != 0) == (size < 4096), "\(size)")
            #expect(size >= 4096 || Array(file[ClosureFileHeader.size...]) == body, "\(size)")
            let (_, frames) = try ClosureFile.checkedFrames(ByteView(file), path: "sized", trusting: nil)
            #expect(frames.decompress() == body, "\(size)")
        }
        let stored = ClosureFile.wrapBody([UInt8](repeating: 1, count: 100))
        let lying = Damage.header(24, 99, width: 8)(stored)
        #expect(throws: ClosureError.corrupt(path: "lying", offset: 24, what: "a stored body of 99 bytes in 100 bytes of file (flags bit 2: they must be equal)")) {
            _ = try ClosureFile.checkedFrames(ByteView(lying), path: "lying", trusting: nil)
        }
    }

    @Test func untouchedSampleDecodes() throws {
        let (_, closure, file) = try Self.sampleClosure()
        #expect(try ClosureFile.decode(file, path: "sample") == closure)
        #expect(Self.file(body: closure.encodedBody()) == file, "the test's header writer matches ClosureFile")
        #expect(ClosureFileHeader(fieldsOf: file).version == LaunchClosure.formatVersion)
    }

    /// Each damage is refused by the reader with the right kind, and `dyld3 verify` reports
    /// the file with exit status 3.
    @Test(arguments: Damage.all)
    func damagedClosureIsRefused(_ damage: Damage) async throws {
        let (app, _, file) = try Self.sampleClosure()
        let damaged = damage.apply(file)
        #expect(damaged != file)
        let decodeError = try #require(throws: ClosureError.self) { _ = try ClosureFile.decode(damaged, path: "damaged") }
        #expect(decodeError.kind == damage.kind, "\(damage): \(decodeError)")

        let cache = try Scratch.directory("damaged")
        defer { Scratch.remove(cache) }
        let path = ClosureCache(directory: cache).closurePath(forApp: app.executable, arch: app.arch)
        try Scratch.write(damaged, to: path)
        let readError = try #require(throws: ClosureError.self) { _ = try ClosureFile.read(path) }
        #expect(readError.kind == damage.kind)
        let verdict = ClosureVerification(checking: path)
        #expect(verdict.status == damage.status, "\(damage): \(verdict.problems)")
        #expect(verdict.problems.count == 1)

        let result = try await Dyld3Binary.verify(cache)
        #expect(result.status == 3, "\(damage): \(result.stdout)")
        #expect(result.lines.first?.hasPrefix("\(path): \(damage.status.rawValue): ") == true, "\(result.stdout)")
        // The summary counts the file under its status, as `--json` does.
        let counted = damage.status == .corrupt ? "1 corrupt, 0 stale" : "0 corrupt, 0 stale, 1 \(damage.status.rawValue)"
        #expect(result.lines.last == "verify: 1 closures, 0 valid, \(counted)")
    }

    /// Every byte of the body flipped, recompressed, with a correct checksum: the reader
    /// throws or returns a closure, and a returned closure can be checked and decoded without
    /// a crash. Then every byte of the frame flipped, checksum corrected.
    @Test func flippedBytesNeverCrashTheReader() throws {
        let app = try #require(Self.launchable.first { $0.name == "paths" && $0.variant == "arm64-chained" })
        let body = try app.closure().encodedBody()
        var refused = 0, accepted = 0
        func check(_ file: [UInt8]) {
            do {
                let closure = try ClosureFile.decode(file, path: "fuzz")
                accepted += 1
                _ = closure.consistencyProblems()
                _ = closure.staleImages()
                for index in closure.images.indices { _ = try? closure.fixups(ofImage: index) }
            } catch {
                refused += 1
            }
        }
        for offset in body.indices {
            for mask: UInt8 in [0xff, 0x01, 0x80] {
                var damaged = body
                damaged[offset] ^= mask
                check(Self.file(body: damaged))
            }
        }
        let file = Self.file(body: body)
        for offset in 40..<file.count {
            var damaged = file
            damaged[offset] ^= 0xff
            check(Self.withChecksum(damaged))
        }
        // Many flips land in strings and numbers the structure cannot tell apart (that is
        // what the checksum is for); the rest must be refused, never trap.
        #expect(refused > 0 && accepted > 0)
        #expect(refused + accepted == body.count * 3 + file.count - 40)
    }

    /// Closures that decode but do not hold together: each inconsistency is found, and
    /// `dyld3 verify` calls the file corrupt.
    @Test func inconsistentClosuresAreCorrupt() async throws {
        let (_, closure, _) = try Self.sampleClosure()
        let main = closure.images[0]
        let data = try #require(main.plan.segments.first { $0.name == "__DATA" })

        var readOnly = closure
        for index in readOnly.images.indices {
            for segment in readOnly.images[index].plan.segments.indices where !readOnly.images[index].plan.segments[segment].protection.contains(.execute) {
                readOnly.images[index].plan.segments[segment].protection = .read
                readOnly.images[index].plan.segments[segment].readOnlyAfterFixups = false
            }
            // Its pages would no longer lie in writable segments: the reader refuses that index.
            readOnly.images[index].fixupPageIndex = .absent
        }
        // Nor would the host services table and thread-local descriptors: the reader refuses those.
        readOnly.threadLocals = .none
        var miscounted = closure
        miscounted.images[0].rebaseCount += 1
        var outside = closure
        outside.images[0].rebaseRuns = ([1] + LEB128.unsigned(data.vmOffset) + [1, 0] + LEB128.signed(Int64(main.plan.vmSize + 0x10)))[...]
        outside.images[0].rebaseCount = 1
        outside.images[0].fixupPageIndex = .absent
        var straddling = closure
        straddling.images[0].rebaseRuns = ([1] + LEB128.unsigned(data.vmOffset + data.vmSize - 4) + [1, 0] + LEB128.signed(0x10))[...]
        straddling.images[0].rebaseCount = 1
        straddling.images[0].fixupPageIndex = .absent
        var missingRegular = closure
        missingRegular.images[0].dependencies[0].target = -1
        var unlistedWeak = closure
        unlistedWeak.images[0].dependencies[0].target = -1
        unlistedWeak.images[0].dependencies[0].kind = .weak
        var twice = closure
        twice.initializerOrder.append(twice.initializerOrder[0])
        var undecodable = closure
        undecodable.images[0].bindRuns = ([1, 0, 1, 0] + LEB128.unsigned(UInt64(closure.bindTargets.count)) + [0])[...]
        undecodable.images[0].fixupPageIndex = .absent

        let cases: [(String, LaunchClosure, String)] = [
            ("no writable segment", readOnly, "is not 8 bytes inside a writable segment"),
            ("rebase count", miscounted, "the counts say"),
            ("rebase outside the image", outside, "outside the image"),
            ("fixup straddling a segment end", straddling, "is not 8 bytes inside a writable segment"),
            ("missing regular dependency", missingRegular, "dependency /usr/lib/libSystem.B.dylib is missing"),
            ("unlisted missing weak dependency", unlistedWeak, "is not listed as missing"),
            ("initializer order", twice, "twice"),
            ("undecodable bind runs", undecodable, "do not decode"),
        ]
        let cache = try Scratch.directory("inconsistent")
        defer { Scratch.remove(cache) }
        for (name, broken, expected) in cases {
            let path = "\(cache)/\(name.replacingOccurrences(of: " ", with: "-")).dyld3closure"
            try ClosureFile.write(broken, to: path)
            // An image listed twice in the initializer order is refused as the closure is read.
            let problems: [String]
            do {
                problems = try ClosureFile.read(path).consistencyProblems()
            } catch {
                problems = ["\(error)"]
            }
            #expect(problems.contains { $0.contains(expected) }, "\(name): \(problems)")
            let verdict = ClosureVerification(checking: path)
            #expect(verdict.status == .corrupt, "\(name)")
            #expect(verdict.problems.allSatisfy { $0.kind == .corrupt })
        }
        let fixupProblems = readOnly.consistencyProblems()
        #expect(fixupProblems.contains { $0.hasSuffix("more bad fixups") }, "a long list is cut short")
        #expect(fixupProblems.count < readOnly.totalRebases + readOnly.totalBinds)

        let result = try await Dyld3Binary.verify(cache)
        #expect(result.status == 3)
        #expect(result.lines.last == "verify: \(cases.count) closures, 0 valid, \(cases.count) corrupt, 0 stale")
        #expect(result.lines.dropLast().allSatisfy { $0.contains(".dyld3closure: corrupt: ") })
    }

    /// Overlapping segments are a structural error the reader itself refuses.
    @Test func overlappingSegmentsAreRefusedByTheReader() throws {
        var (_, closure, _) = try Self.sampleClosure()
        closure.images[0].plan.segments[1].vmOffset = closure.images[0].plan.segments[0].vmOffset + 8
        let error = try #require(throws: ClosureError.self) { _ = try ClosureFile.decode(ClosureFile.encode(closure), path: "overlap") }
        #expect(error.kind == "corrupt")
        #expect("\(error)".contains("overlap"))
    }

    /// Files in the cache that are not closures, and a closure others can write.
    @Test func foreignAndUntrustedFilesAreReported() async throws {
        let (app, _, file) = try Self.sampleClosure()
        let cache = try Scratch.directory("foreign")
        defer { Scratch.remove(cache) }
        let closurePath = try app.install(into: cache)
        try Scratch.write(Array("notes".utf8), to: cache + "/notes.txt")
        try Scratch.write(Array("hello, world".utf8), to: cache + "/hello.dyld3closure")
        try FileManager.default.createDirectory(atPath: cache + "/sub.dyld3closure", withIntermediateDirectories: false)
        #expect(ClosureVerification(checking: cache + "/notes.txt").status == .notAClosure)
        #expect(ClosureVerification(checking: cache + "/hello.dyld3closure").status == .notAClosure)
        #expect(ClosureVerification(checking: cache + "/sub.dyld3closure").status == .notAClosure)
        #expect(ClosureVerification(checking: closurePath).status == .valid)

        let untrusted = cache + "/untrusted.dyld3closure"
        try Scratch.write(file, to: untrusted)
        try FileManager.default.setAttributes([.posixPermissions: 0o666], ofItemAtPath: untrusted)
        #expect(ClosureVerification(checking: untrusted).status == .untrusted)

        let result = try await Dyld3Binary.verify(cache, json: true)
        #expect(result.status == 5, "an untrusted closure gives verify its own exit status")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let files = try #require(object["files"] as? [[String: Any]])
        let statuses = Dictionary(uniqueKeysWithValues: files.compactMap { file in
            (file["path"] as? String).map { (($0 as NSString).lastPathComponent, file["status"] as? String ?? "") }
        })
        #expect(statuses["notes.txt"] == "not-a-closure")
        #expect(statuses["hello.dyld3closure"] == "not-a-closure")
        #expect(statuses["sub.dyld3closure"] == "not-a-closure")
        #expect(statuses["untrusted.dyld3closure"] == "untrusted")
        #expect(statuses[(closurePath as NSString).lastPathComponent] == "valid")
        let counts = try #require(object["counts"] as? [String: Int])
        #expect(counts["closures"] == 5 && counts["valid"] == 1 && counts["not_a_closure"] == 3 && counts["untrusted"] == 1)
        #expect(counts["corrupt"] == 0 && counts["stale"] == 0 && counts["incompatible"] == 0)
    }

    /// The header's flags must agree with the body, with no unknown bit set.
    @Test func headerFlagsMustMatchTheBody() async throws {
        let (_, _, file) = try Self.sampleClosure()
        let cache = try Scratch.directory("flags")
        defer { Scratch.remove(cache) }
        let own = UInt64(ClosureFileHeader(fieldsOf: file).flags)
        for (name, flags, expected) in [("content-only", own | 1, "disagrees"), ("unknown", own | 0x80, "unknown header flags \(hex(own | 0x80))"),
                                        ("not stored", own & ~4, "do not decompress")] {
            let path = "\(cache)/\(name).dyld3closure"
            try Scratch.write(Damage.header(20, flags, width: 4)(file), to: path)
            #expect(throws: ClosureError.self) { try ClosureFile.read(path) }
            let verdict = ClosureVerification(checking: path)
            #expect(verdict.status == .corrupt)
            #expect(verdict.problems.count == 1 && verdict.problems[0].message.contains(expected), "\(verdict.problems)")
        }
        #expect(try await Dyld3Binary.verify(cache).status == 3)
    }
}
