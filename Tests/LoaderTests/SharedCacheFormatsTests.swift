import Foundation
import MachOReader
import ProcessRunner
import SharedCache
import SharedCacheBuild
import TestSupport
import Testing

/// The parts of Apple's cache format this project's builder does not write but `inspect` reads
/// from Apple's caches: slide info v3 and v5 (arm64e) and subcaches. Each is made here from a
/// cache the builder wrote, its words encoded again from the test's own list of pointers, and
/// read back against that list and, for v3 and subcaches, against DyldExtractor (tools/dsc-oracle).
@Suite(.serialized, .bounded) struct SharedCacheFormatsTests {
    /// Each slid word of `bytes` (a cache with slide info v2): its mapping, its offset in the
    /// mapping and the unslid pointer it holds, as the builder's v2 chains say.
    static func pointers(_ bytes: [UInt8]) throws -> [(mapping: Int, offset: UInt64, value: UInt64)] {
        let file = try DyldCacheFile(parsing: ByteView(bytes))
        var all: [(mapping: Int, offset: UInt64, value: UInt64)] = []
        for (index, mapping) in file.mappings.enumerated() {
            guard let slide = try file.slideInfo(index) else { continue }
            #expect(slide.version == 2)
            try slide.forEachLocation(in: try file.view.slice(Int(mapping.fileOffset), Int(mapping.size))) { offset, value in
                all.append((index, offset, value))
            }
        }
        return all
    }

    /// `bytes` with every mapping's slide info written again as `version` (3 or 5) over the same
    /// pointers, their words encoded as that version holds them: every other one authenticated
    /// (in v3 every one that is not null: a plain v3 pointer holds 43 address bits, and an
    /// x86_64 cache lies above them).
    static func reencoded(_ bytes: [UInt8], version: UInt32) throws -> [UInt8] {
        let file = try DyldCacheFile(parsing: ByteView(bytes))
        let base = file.header.sharedRegionStart
        var out = bytes
        let all = try pointers(bytes)
        for (index, mapping) in file.mappings.enumerated() where mapping.slideInfoFileSize > 0 {
            let page: UInt64 = 4096
            let mine = all.filter { $0.mapping == index }
            var starts = [UInt16](repeating: 0xFFFF, count: Int((mapping.size + page - 1) / page))
            for (position, pointer) in mine.enumerated() {
                let pageIndex = Int(pointer.offset / page)
                if starts[pageIndex] == 0xFFFF { starts[pageIndex] = UInt16(pointer.offset % page) }
                let next = position + 1 < mine.count && mine[position + 1].offset / page == pointer.offset / page ? mine[position + 1].offset : pointer.offset
                let stride = (next - pointer.offset) / 8
                try #require((next - pointer.offset) % 8 == 0 && stride < 0x800)
                let authenticated = (position % 2 == 1 || version == 3) && pointer.value != 0
                var word: UInt64
                if version == 3 {
                    word = authenticated ? 1 << 63 | (pointer.value - base) : pointer.value
                    word |= stride << 51
                } else {
                    word = (pointer.value == 0 ? 0 : pointer.value - base) | stride << 52 | (authenticated ? 1 << 63 : 0)
                }
                let at = Int(mapping.fileOffset + pointer.offset)
                for byte in 0..<8 { out[at + byte] = UInt8(truncatingIfNeeded: word >> (8 * UInt64(byte))) }
            }
            let info = DyldCache.SlideInfoV3V5(version: version, pageSize: UInt32(page), pageStarts: starts, valueAdd: base).bytes
            try #require(UInt64(info.count) <= mapping.slideInfoFileSize)
            out.replaceSubrange(Int(mapping.slideInfoFileOffset)..<(Int(mapping.slideInfoFileOffset) + info.count), with: info)
        }
        return out
    }

    /// The pointers of the cache at `bytes` as its slide info (any version) reads them, by address.
    static func read(_ bytes: [UInt8]) throws -> (version: Set<UInt32>, pointers: [UInt64: UInt64]) {
        let file = try DyldCacheFile(parsing: ByteView(bytes))
        var versions = Set<UInt32>(), pointers: [UInt64: UInt64] = [:]
        for (index, mapping) in file.mappings.enumerated() {
            guard let slide = try file.slideInfo(index) else { continue }
            versions.insert(slide.version)
            try slide.forEachLocation(in: try file.view.slice(Int(mapping.fileOffset), Int(mapping.size))) { offset, value in
                pointers[mapping.address + offset] = value
            }
        }
        return (versions, pointers)
    }

    @Test func slideInfoV3AndV5ReadTheSamePointersAsTheV2TheyWereEncodedFrom() async throws {
        let root = try SharedCacheTests.generatedRoot()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let built = try SharedCacheBuilder.build(root: root, arch: "x86_64")
        let bytes = try Corpus.bytes(built.path)
        let file = try DyldCacheFile(parsing: ByteView(bytes))
        let expected = Dictionary(uniqueKeysWithValues: try Self.pointers(bytes).map { (file.mappings[$0.mapping].address + $0.offset, $0.value) })
        try #require(expected.count == built.slideLocations && expected.count > 1000, "\(expected.count) pointers")
        for version: UInt32 in [3, 5] {
            let forged = try Self.reencoded(bytes, version: version)
            let (versions, pointers) = try Self.read(forged)
            #expect(versions == [version] && pointers == expected, "v\(version): \(pointers.count) pointers read, \(expected.count) encoded")
            // What inspect says of it.
            let path = root + "/forged-v\(version)"
            try Data(forged).write(to: URL(fileURLWithPath: path))
            let json = try jsonObject(try await Dyld3Binary.run(["inspect", "--json", path], limitSeconds: 60).stdout)
            let mappings = try #require(json["mappings"] as? [[String: Any]])
            let listed = mappings.compactMap { $0["slide_info_version"] as? Int }
            #expect(!listed.isEmpty && listed.allSatisfy { $0 == Int(version) })
            #expect(mappings.compactMap { $0["slide_locations"] as? Int }.reduce(0, +) == expected.count)
            // DyldExtractor reads v3 (it has no v5 rebaser): the same words, the same values.
            guard version == 3 else { continue }
            let oracle = try await ProcessRunner.run(Paths.repoRoot.appendingPathComponent("tools/dsc-oracle").path, [path])
            try #require(oracle.status == 0, "\(oracle.error)")
            let theirs = try #require(try jsonObject(oracle.output)["slides"] as? [String: Any]).reduce(into: [UInt64: UInt64]()) { map, entry in
                map[UInt64(entry.key)!] = (entry.value as? NSNumber)?.uint64Value
            }
            #expect(theirs == expected, "DyldExtractor: \(theirs.count) pointers, \(theirs.filter { expected[$0.key] != $0.value }.count) differ")
        }
    }

    /// A plain v3 pointer's top byte (bits 43–50) and a plain v5 pointer's (bits 34–41) come
    /// back above its address; an authenticated one's target is its offset plus the value to add.
    @Test func plainPointersKeepTheirTopByte() throws {
        let base: UInt64 = 0x1_8000_0000, target: UInt64 = 0x1_8000_4010, tag: UInt64 = 0x80
        var page = [UInt8](repeating: 0, count: 4096)
        func put(_ word: UInt64, at offset: Int) { for byte in 0..<8 { page[offset + byte] = UInt8(truncatingIfNeeded: word >> (8 * UInt64(byte))) } }
        // v3: a plain tagged pointer at 16, then (a stride of 3 words) an authenticated one at 40.
        put(tag << 43 | target | 3 << 51, at: 16)
        put(1 << 63 | 0x20, at: 40)
        var seen: [UInt64: UInt64] = [:]
        try DyldCache.SlideInfoV3V5(version: 3, pageSize: 4096, pageStarts: [16], valueAdd: base).forEachLocation(in: ByteView(page)) { seen[$0] = $1 }
        #expect(seen == [16: tag << 56 | target, 40: base + 0x20])
        // v5: the target's offset from the base, the tag in bits 34-41.
        page = [UInt8](repeating: 0, count: 4096)
        put((target - base) | tag << 34 | 3 << 52, at: 16)
        put(1 << 63 | 0x20, at: 40)
        seen = [:]
        try DyldCache.SlideInfoV3V5(version: 5, pageSize: 4096, pageStarts: [16], valueAdd: base).forEachLocation(in: ByteView(page)) { seen[$0] = $1 }
        #expect(seen == [16: tag << 56 | target, 40: base + 0x20])
    }

    @Test func aChainThatLeavesItsPageOrAnUnknownVersionIsRefused() throws {
        let (root, _, bytes) = try SharedCacheTests.fixtureCache()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let file = try DyldCacheFile(parsing: ByteView(bytes))
        let forged = try Self.reencoded(bytes, version: 5)
        let (index, mapping) = try #require(file.mappings.enumerated().first { $0.element.slideInfoFileSize > 0 })
        let info = try DyldCache.SlideInfoV3V5(parsing: ByteView(Array(forged[Int(mapping.slideInfoFileOffset)...].prefix(Int(mapping.slideInfoFileSize)))),
                                               mappingSize: mapping.size)
        let page = try #require(info.pageStarts.firstIndex { $0 != 0xFFFF })
        // A page start at the page's last word but one, whose word strides on past the page.
        var leaving = SharedCacheTests.forged(forged, Int(mapping.slideInfoFileOffset) + 24 + page * 2, UInt64(4096 - 8), 2)
        leaving = SharedCacheTests.forged(leaving, Int(mapping.fileOffset) + page * 4096 + 4096 - 8, 2 << 52, 8)
        #expect(throws: MachOError.self) { try Self.read(leaving) }
        // Every truncation of the slide info (its header, its page starts) is refused, never read past.
        let blob = Array(forged[Int(mapping.slideInfoFileOffset)...].prefix(Int(mapping.slideInfoFileSize)))
        for length in 0..<min(blob.count, 24 + info.pageStarts.count * 2) {
            #expect(throws: MachOError.self, "\(length) bytes") {
                _ = try DyldCache.SlideInfo(parsing: ByteView(Array(blob.prefix(length))), mappingSize: mapping.size)
            }
        }
        // More page starts than the mapping has pages, and a page size that is neither 4 nor 16 KiB.
        for (field, value) in [(8, UInt64(mapping.size / 4096 + 2)), (4, 8192)] {
            let wrong = SharedCacheTests.forged(blob, field, value, 4)
            #expect(throws: MachOError.self, "field \(field)") { _ = try DyldCache.SlideInfo(parsing: ByteView(wrong), mappingSize: mapping.size) }
        }
        for version: UInt64 in [1, 4, 6] {
            let unknown = SharedCacheTests.forged(forged, Int(mapping.slideInfoFileOffset), version, 4)
            #expect(throws: MachOError.self, "v\(version)") { _ = try DyldCacheFile(parsing: ByteView(unknown)).slideInfo(index) }
        }
    }

    @Test func subcachesAreListedWithTheFileBesideEachAsAnIndependentReaderOpensThem() async throws {
        let (root, _, bytes) = try SharedCacheTests.fixtureCache()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let file = try DyldCacheFile(parsing: ByteView(bytes))
        // The main cache names one subcache, `.01`, whose file is another cache with its own UUID.
        let uuid = (0..<16).map { UInt8($0 * 7 + 1) }
        var main = bytes + [UInt8](repeating: 0, count: (8 - bytes.count % 8) % 8)
        let table = main.count
        main += DyldCache.SubCache(uuid: uuid, vmOffset: file.header.sharedRegionSize, fileSuffix: ".01").bytes
        main = SharedCacheTests.forged(SharedCacheTests.forged(main, 392, UInt64(table), 4), 396, 1, 4)
        let path = root + "/main_cache"
        try Data(main).write(to: URL(fileURLWithPath: path))
        var sub = bytes
        sub.replaceSubrange(88..<104, with: uuid)
        try Data(sub).write(to: URL(fileURLWithPath: path + ".01"))

        let reread = try DyldCacheFile(parsing: ByteView(main))
        #expect(reread.subCaches == [DyldCache.SubCache(uuid: uuid, vmOffset: file.header.sharedRegionSize, fileSuffix: ".01")])
        let json = try jsonObject(try await Dyld3Binary.run(["inspect", "--json", path], limitSeconds: 60).stdout)
        let listed = try #require(json["subcaches"] as? [[String: Any]])
        let uuidText = try #require(listed.first?["uuid"] as? String)
        #expect(listed.count == 1 && listed[0]["suffix"] as? String == ".01" && listed[0]["file_uuid"] as? String == uuidText)
        #expect((listed[0]["vm_offset"] as? NSNumber)?.uint64Value == file.header.sharedRegionSize)
        let oracle = try await ProcessRunner.run(Paths.repoRoot.appendingPathComponent("tools/dsc-oracle").path, [path])
        try #require(oracle.status == 0, "\(oracle.error)")
        let theirs = try #require(try jsonObject(oracle.output)["subcaches"] as? [[String: Any]])
        #expect(theirs.count == 1 && (theirs.first?["file_uuid"] as? String)?.uppercased() == uuidText.replacingOccurrences(of: "-", with: ""))

        // Without the file, or with another cache there, inspect says so on the subcache's line.
        try Data(bytes).write(to: URL(fileURLWithPath: path + ".01"))
        let other = try await Dyld3Binary.run(["inspect", path], limitSeconds: 60).stdout
        #expect(other.contains(".01: \(uuidText)") && other.contains("another UUID in \(path).01"), "\(other)")
        try FileManager.default.removeItem(atPath: path + ".01")
        let missing = try await Dyld3Binary.run(["inspect", path], limitSeconds: 60).stdout
        #expect(missing.contains("missing (\(path).01)"), "\(missing)")
    }
}
