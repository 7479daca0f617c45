import Foundation
import LoaderCore
import MachOReader
import ProcessRunner
import SharedCache
import SharedCacheBuild
import TestSupport
import Testing

/// The dyld shared cache `dyld3 shared-cache build` writes, read back by an independent reader
/// of Apple's format (DyldExtractor, from PyPI, through tools/dsc-oracle) and checked against
/// llvm-objdump's view of the source dylibs: every pointer the slide info names holds the
/// address in the cache of what the source image's rebase or bind points to.
@Suite(.serialized, .bounded) struct SharedCacheTests {
    /// A root of 100 generated frameworks and their libSystem (`build/demo-gen100`).
    static func generatedRoot() throws -> String {
        let generated = Paths.repoRoot.appendingPathComponent("build/demo-gen100")
        try #require(FileManager.default.fileExists(atPath: generated.appendingPathComponent("root").path),
                     "run tools/gen-app --preset 100 --seed 1 --out build/demo-gen100")
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("dyld3-shared-cache-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: root + "/Library", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: generated.appendingPathComponent("root/usr").path, toPath: root + "/usr")
        try FileManager.default.copyItem(atPath: generated.appendingPathComponent("gen100.app/Frameworks").path, toPath: root + "/Library/Frameworks")
        return root
    }

    /// A copy of the x86_64 chained fixtures' root in a temporary directory (the caller removes
    /// it), the shared cache built in it, and the cache's bytes.
    static func fixtureCache() throws -> (root: String, built: SharedCacheBuilder.Built, bytes: [UInt8]) {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("dyld3-shared-cache-\(UUID().uuidString)").path
        try FileManager.default.copyItem(atPath: Paths.repoRoot.appendingPathComponent("build/fixtures/x86_64-chained/root").path, toPath: root)
        let built = try SharedCacheBuilder.build(root: root, arch: "x86_64")
        return (root, built, try Corpus.bytes(built.path))
    }

    /// `bytes` with `value` stored little-endian in its `size` bytes at `offset`.
    static func forged(_ bytes: [UInt8], _ offset: Int, _ value: UInt64, _ size: Int) -> [UInt8] {
        var copy = bytes
        for byte in 0..<size { copy[offset + byte] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(byte))) }
        return copy
    }

    /// llvm-objdump's hexadecimal column.
    static func hex(_ field: Substring) -> UInt64? { UInt64(field.hasPrefix("0x") ? field.dropFirst(2) : field, radix: 16) }

    @Test func aCacheReadsTheSameInAnIndependentReaderAndHoldsObjdumpsTargets() async throws {
        let root = try Self.generatedRoot()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let built = try await Dyld3Binary.run(["shared-cache", "build", "--root", root, "--json"], limitSeconds: 120)
        let summary = try jsonObject(built.stdout)
        let cache = try #require(summary["cache"] as? String, "\(built.stderr)")
        #expect(cache == root + "/System/Library/dyld/dyld_shared_cache_x86_64")
        let ours = try jsonObject(try await Dyld3Binary.run(["inspect", "--json", cache], limitSeconds: 60).stdout)
        let oracle = try await ProcessRunner.run(Paths.repoRoot.appendingPathComponent("tools/dsc-oracle").path, [cache])
        try #require(oracle.status == 0, "\(oracle.error)")
        let theirs = try jsonObject(oracle.output)

        // The tables, field by field.
        #expect(theirs["magic"] as? String == "dyld_v1  x86_64" && theirs["platform"] as? Int == 1)
        #expect((theirs["uuid"] as? String)?.uppercased() == (ours["uuid"] as? String)?.replacingOccurrences(of: "-", with: ""))
        let ourMappings = try #require(ours["mappings"] as? [[String: Any]]), theirMappings = try #require(theirs["mappings"] as? [[String: Any]])
        #expect(ourMappings.count == theirMappings.count && ourMappings.count == summary["mappings"] as? Int)
        for (mine, other) in zip(ourMappings, theirMappings) {
            #expect(mine["address"] as? UInt64 == (other["address"] as? NSNumber)?.uint64Value && mine["size"] as? UInt64 == (other["size"] as? NSNumber)?.uint64Value)
            #expect((mine["file_offset"] as? NSNumber)?.uint64Value == (other["file_offset"] as? NSNumber)?.uint64Value)
            #expect((mine["slide_info_version"] as? Int) == (other["slide_info_version"] as? Int))
        }
        let ourImages = try #require(ours["images"] as? [[String: Any]]), theirImages = try #require(theirs["images"] as? [[String: Any]])
        #expect(ourImages.count == summary["images"] as? Int && theirImages.count == ourImages.count && ourImages.count > 100)
        var cacheAddress: [String: UInt64] = [:]
        for (mine, other) in zip(ourImages, theirImages) {
            let address = try #require((other["address"] as? NSNumber)?.uint64Value)
            #expect(mine["path"] as? String == other["path"] as? String && (mine["address"] as? NSNumber)?.uint64Value == address)
            // Its own Mach-O header, as the independent reader parses it, says where it is.
            let segments = try #require(other["segments"] as? [[String: Any]])
            #expect((segments.first?["vmaddr"] as? NSNumber)?.uint64Value == address && segments.first?["name"] as? String == "__TEXT")
            cacheAddress[try #require(other["path"] as? String)] = address
        }

        // Each source dylib's rebases and binds (llvm-objdump), where the cache must hold them.
        let slides = try #require(theirs["slides"] as? [String: Any]).reduce(into: [UInt64: UInt64]()) { map, entry in
            map[UInt64(entry.key)!] = (entry.value as? NSNumber)?.uint64Value
        }
        #expect(slides.count == summary["slide_locations"] as? Int)
        let files = try SharedCacheBuilder.dylibs(root: root, arch: "x86_64")
        #expect(files.count == ourImages.count)
        var exports: [String: [String: UInt64]] = [:]  // image leaf name -> symbol -> address in the cache
        var sources: [(file: String, address: UInt64)] = []
        for file in files {
            let name = try #require(try MachOImage(parsing: try Corpus.bytes(file)).id?.installName)
            let address = try #require(cacheAddress[name], "\(name) is not in the cache")
            let leaf = String(name.split(separator: "/").last!).replacingOccurrences(of: ".B.dylib", with: "").replacingOccurrences(of: ".dylib", with: "")
            sources.append((file, address))
            for line in try await Oracle.objdump(["--macho", "--exports-trie", file]).split(separator: "\n") {
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                guard fields.count >= 2, let offset = Self.hex(fields[0]) else { continue }
                exports[leaf, default: [:]][String(fields[1])] = address + offset
            }
        }
        var expected: [UInt64: Set<UInt64>] = [:]
        var binds: [UInt64: UInt64] = [:]  // each bind's location in the cache -> its addend
        for (file, address) in sources {
            for line in try await Oracle.objdump(["--macho", "--dyld-info", file]).split(separator: "\n").dropFirst(3) {
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                guard fields.count >= 6, let location = Self.hex(fields[2]) else { continue }
                if fields[4] == "rebase", let target = Self.hex(fields[5]) {
                    expected[address + location] = [address + target]
                } else if fields[4] == "bind", fields.count >= 8, let addend = Self.hex(fields[5]) {
                    let symbol = String(fields[7])
                    var targets = Set([exports[String(fields[6])]?[symbol]].compactMap { $0 })
                    // A weak definition may be coalesced to another image's.
                    for table in exports.values { if let other = table[symbol] { targets.insert(other) } }
                    expected[address + location] = Set(targets.map { $0 &+ addend })
                    binds[address + location] = addend
                }
            }
        }
        #expect(expected.count > 40_000 && Set(expected.keys) == Set(slides.keys), "\(expected.count) objdump locations, \(slides.count) slid")
        let wrong = slides.filter { location, value in !(expected[location]?.contains(value) ?? false) }
        #expect(wrong.isEmpty, "\(wrong.count) pointers differ, e.g. \(wrong.first.map { "0x\(String($0.key, radix: 16)) = 0x\(String($0.value, radix: 16))" } ?? "")")

        // The patch table lists exactly the source dylibs' binds (llvm-objdump), each under the
        // export whose address plus the bind's addend is the word the independent reader slid.
        let file = try DyldCacheFile(parsing: ByteView(try Corpus.bytes(cache)))
        let table = try #require(try file.patchTable())
        let start = file.header.sharedRegionStart
        var uses: [UInt64: (impl: UInt64, addend: Int64)] = [:]
        for image in 0..<table.imageCount {
            for index in try table.exportRange(ofImage: image) {
                let export = try table.export(index)
                for use in export.locations {
                    let location = try table.location(use)
                    #expect(uses[start + UInt64(location.cacheOffset)] == nil, "a location listed twice")
                    uses[start + UInt64(location.cacheOffset)] = (start + UInt64(export.cacheOffsetOfImpl), location.addend)
                }
            }
        }
        #expect(binds.count > 10_000 && Set(uses.keys) == Set(binds.keys), "\(uses.count) listed, \(binds.count) binds")
        let misplaced = uses.filter { location, use in binds[location] != UInt64(bitPattern: use.addend) || slides[location] != use.impl &+ UInt64(bitPattern: use.addend) }
        #expect(misplaced.isEmpty, "\(misplaced.count) uses differ, e.g. \(misplaced.first.map { "0x\(String($0.key, radix: 16))" } ?? "")")
        let listed = try #require(ours["patch_table"] as? [String: Any])
        #expect(listed["locations"] as? Int == uses.count && listed["exports"] as? Int == table.exportCount && listed["version"] as? Int == 1)
    }

    /// A patch table that points past the cache, past its arrays, past its image, or at a use
    /// outside the mappings of the cache's images is refused: by the reader, and by a dyld2 launch
    /// opening the cache in one line naming it.
    @Test func aForgedPatchTableIsRefused() throws {
        let (root, built, bytes) = try Self.fixtureCache()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let whole = try DyldCacheFile(parsing: ByteView(bytes))
        let table = try #require(try whole.patchTable())
        try #require(table.exportCount > 0 && table.locationCount > 0 && built.patchLocations == table.locationCount)
        let info = Int(whole.header.patchInfoAddr - whole.header.sharedRegionStart)
        func u64(_ offset: Int) -> Int { (0..<8).reduce(0) { $0 | Int(bytes[offset + $1]) << (8 * $1) } }
        let images = u64(info) - Int(whole.header.sharedRegionStart)
        let exports = u64(info + 16) - Int(whole.header.sharedRegionStart), locations = u64(info + 32) - Int(whole.header.sharedRegionStart)
        func forged(_ offset: Int, _ value: UInt64, _ size: Int = 4) -> [UInt8] { Self.forged(bytes, offset, value, size) }
        let cases: [(String, [UInt8])] = [
            ("the table past the cache", forged(152, whole.header.sharedRegionStart + UInt64(bytes.count) * 2, 8)),
            ("more locations than the file holds", forged(info + 40, 1 << 40, 8)),
            ("an image's exports past the array", forged(images + 4, UInt64(table.exportCount + 1))),
            ("an export's locations past the array", forged(exports + 8, UInt64(table.locationCount + 1))),
            ("an export past its image", forged(exports, 0)),
            ("a use in the header's read-only mapping", forged(locations, 0x10)),
            ("a use past the cache", forged(locations, UInt64(bytes.count) * 2)),
        ]
        for (what, forgedBytes) in cases {
            let file = try DyldCacheFile(parsing: ByteView(forgedBytes))
            #expect(throws: MachOError.self, "\(what)") { _ = try file.patchTable() }
        }
        // dyld2 opening the cache refuses it, naming it (`auto` then loads from the files).
        try FileManager.default.removeItem(atPath: built.path)
        try Data(cases[5].1).write(to: URL(fileURLWithPath: built.path))
        do {
            _ = try SharedCacheDylibs.open(SharedCacheRequest(path: built.path, slidCopyDirectory: root, required: false), arch: "x86_64")
            Issue.record("a forged patch table was used")
        } catch {
            #expect("\(error)".contains(built.path) && "\(error)".contains("not in a mapping of the cache's images") && !"\(error)".contains("\n"), "\(error)")
        }
    }

    /// Every truncation of a cache's tables, and forged counts and offsets, are refused with
    /// an error (never a crash or a read past the bytes); the whole file reads.
    @Test func truncatedAndForgedTablesAreRefused() throws {
        let (root, _, bytes) = try Self.fixtureCache()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let whole = try DyldCacheFile(parsing: ByteView(bytes))
        let dylibs = try FileManager.default.contentsOfDirectory(atPath: root + "/usr/lib").filter { $0.hasSuffix(".dylib") }.sorted()
        // Every dylib once, in load order (those no other dylib links first).
        #expect(dylibs.count >= 3 && whole.images.map(\.path).sorted() == dylibs.map { "/usr/lib/" + $0 } && whole.images.count == dylibs.count)
        let tablesEnd = Int(whole.header.imagesTextOffset) + whole.images.count * DyldCache.Image.textInfoSize
        for length in stride(from: 0, to: tablesEnd, by: 3) {
            #expect(throws: MachOError.self, "\(length) bytes") { try DyldCacheFile(parsing: ByteView(Array(bytes.prefix(length)))) }
        }
        func forged(_ offset: Int, _ value: UInt32) -> [UInt8] { Self.forged(bytes, offset, UInt64(value), 4) }
        // Counts that claim more than the file holds, a mapping past the file, a path past it.
        for (field, value) in [(316, UInt32.max), (452, 0x1000_0000), (312, UInt32(bytes.count - 8))] {
            #expect(throws: MachOError.self, "field \(field)") { try DyldCacheFile(parsing: ByteView(forged(field, value))) }
        }
        let mapping1 = Int(whole.header.mappingWithSlideOffset) + DyldCache.Mapping.size
        #expect(throws: MachOError.self) { try DyldCacheFile(parsing: ByteView(forged(mapping1 + 8, UInt32(bytes.count)))) }
        #expect(throws: MachOError.self) { try DyldCacheFile(parsing: ByteView(forged(Int(whole.header.imagesOffset) + 24, UInt32(bytes.count + 10)))) }
    }

    /// `inspect CACHE --image NAME`: an image read where it lies in the cache. Its exports are
    /// llvm-objdump's of the source dylib, row for row, each address moved by where the cache
    /// put the image; its segments are the source's, at the cache's addresses.
    @Test func anImageOfTheCacheReadsAsItsSourceDylib() async throws {
        let (root, built, bytes) = try Self.fixtureCache()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let cache = try DyldCacheFile(parsing: ByteView(bytes))
        var compared = 0
        for image in cache.images {
            let source = root + image.path
            let theirs = try await Oracle.objdump(["--macho", "--exports-trie", source]).split(separator: "\n").filter { $0.hasPrefix("0x") }
            guard !theirs.isEmpty else { continue }
            let ours = try await Dyld3Binary.run(["inspect", built.path, "--image", image.path, "--exports-trie"], limitSeconds: 60)
            try #require(ours.status == 0, "\(ours.stderr)")
            let rows = ours.stdout.split(separator: "\n").filter { $0.hasPrefix("0x") }
            #expect(rows.count == theirs.count, "\(image.path)")
            let base = cache.images.first { $0.path == image.path }?.address ?? 0
            for (mine, other) in zip(rows, theirs) {
                let (a, b) = (mine.split(separator: " ", maxSplits: 1), other.split(separator: " ", maxSplits: 1))
                let (address, sourceAddress) = (Self.hex(a[0]), Self.hex(b[0]))
                #expect(a.count == 2 && b.count == 2 && a[1].trimmingCharacters(in: .whitespaces) == b[1].trimmingCharacters(in: .whitespaces)
                        && address.map { $0 &- base } == sourceAddress, "\(image.path): \(mine) vs \(other)")
            }
            let summary = try await Dyld3Binary.run(["inspect", built.path, "--image", image.path], limitSeconds: 60)
            let segments = try await Oracle.objdump(["--macho", "--private-headers", source]).split(separator: "\n")
                .filter { $0.contains("segname") }.map { String($0.split(separator: " ").last ?? "") }
            #expect(segments.allSatisfy { summary.stdout.contains("    \($0) ") } && summary.stdout.contains("vm 0x\(String(base, radix: 16))+"),
                    "\(summary.stdout)")
            compared += 1
        }
        #expect(compared >= 3)
    }

    /// `shared-cache verify`: valid as built; stale when a source dylib changes; untrusted when
    /// others can write it; corrupt when one byte changes (it no longer hashes to its UUID).
    @Test func verifyNamesWhatIsWrongWithACache() async throws {
        let (root, built, _) = try Self.fixtureCache()
        defer { try? FileManager.default.removeItem(atPath: root) }
        func verify(_ arguments: [String] = []) async throws -> (status: Int32, json: [String: Any]) {
            let result = try await Dyld3Binary.run(["shared-cache", "verify", built.path, "--json"] + arguments, limitSeconds: 60)
            return (result.status, try jsonObject(result.stdout))
        }
        let valid = try await verify(["--root", root])
        let dylibs = try FileManager.default.contentsOfDirectory(atPath: root + "/usr/lib").filter { $0.hasSuffix(".dylib") }
        #expect(valid.status == 0 && valid.json["status"] as? String == "valid" && valid.json["images"] as? Int == dylibs.count)
        var later = [timespec(tv_sec: time(nil) + 10, tv_nsec: 0), timespec(tv_sec: time(nil) + 10, tv_nsec: 0)]
        try #require(utimensat(AT_FDCWD, root + "/usr/lib/libobjc.A.dylib", &later, 0) == 0)
        let stale = try await verify(["--root", root])
        #expect(stale.status == 4 && (stale.json["problems"] as? [String])?.first?.contains("/usr/lib/libobjc.A.dylib changed") == true, "\(stale.json)")
        try #require(chmod(built.path, 0o666) == 0)
        let untrusted = try await verify()
        #expect(untrusted.status == 5 && untrusted.json["status"] as? String == "untrusted")
        var bytes = try Corpus.bytes(built.path)
        bytes[bytes.count / 2] ^= 1
        try Data(bytes).write(to: URL(fileURLWithPath: built.path))
        try #require(chmod(built.path, 0o644) == 0)
        let corrupt = try await verify()
        #expect(corrupt.status == 3 && (corrupt.json["problems"] as? [String])?.first?.contains("do not hash to its UUID") == true, "\(corrupt.json)")
    }
}
