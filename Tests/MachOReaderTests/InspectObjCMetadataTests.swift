import Foundation
@testable import MachOInspect
@testable import MachOReader
import ProcessRunner
import TestSupport
import Testing

/// `dyld3 inspect --objc` against `llvm-objdump-19 --macho --objc-meta-data`, slice by
/// slice, only whitespace allowed to differ: every Mach-O file of the corpus, every image
/// of the fixture builds (the objc app in all four builds, the reader fixtures), an image
/// with relative method lists linked here, and damaged copies of real images.
@Suite(.bounded) struct InspectObjCMetadataTests {
    /// How one file compared: slices compared, slices with Objective-C rows, rows that agreed.
    struct Agreement {
        var slices = 0
        var slicesWithMetadata = 0
        var rows = 0
        var differences: [String] = []
    }

    /// Compares every slice of the file at `path`.
    static func compare(_ path: String) async throws -> Agreement {
        var agreement = Agreement()
        let bytes = try Corpus.bytes(path)
        for arch in try Corpus.architectures(path) {
            let expected = Oracle.normalized(try await Oracle.objdump(["--objc-meta-data", "--arch=\(arch)", path]))
            let actual = Oracle.normalized(try ObjdumpReport.render(path: path, bytes: bytes, tables: [.objc], arch: .named(arch)))
            agreement.slices += 1
            if expected.contains(where: { $0.hasPrefix("Contents of (") }) { agreement.slicesWithMetadata += 1 }
            if expected == actual {
                agreement.rows += expected.count
            } else if let line = zip(expected, actual).enumerated().first(where: { $0.element.0 != $0.element.1 }) ?? nil {
                agreement.differences.append("\(path) --arch \(arch) line \(line.offset + 1):\n  llvm-objdump: \(line.element.0)\n  inspect:      \(line.element.1)")
            } else {
                agreement.differences.append("\(path) --arch \(arch): llvm-objdump printed \(expected.count) lines, inspect \(actual.count)")
            }
        }
        return agreement
    }

    /// Compares every file; the total, and each file's agreement by path.
    static func compareAll(_ paths: [String], _ what: String) async throws -> (total: Agreement, files: [String: Agreement]) {
        var total = Agreement()
        var byPath: [String: Agreement] = [:]
        var files = 0
        for path in paths {
            let agreement = try await compare(path)
            byPath[path] = agreement
            total.slices += agreement.slices
            total.slicesWithMetadata += agreement.slicesWithMetadata
            total.rows += agreement.rows
            total.differences += agreement.differences
            if agreement.slicesWithMetadata > 0 { files += 1 }
        }
        for difference in total.differences.prefix(5) { Issue.record(Comment(rawValue: difference)) }
        print("inspect --objc, \(what): \(paths.count) files (\(files) with Objective-C metadata), \(total.slices) slices (\(total.slicesWithMetadata) with metadata), \(total.rows) rows agree with llvm-objdump; \(total.differences.count) slices differ")
        return (total, byPath)
    }

    /// Every Mach-O file of the corpus, including pyobjc's `_objc` and `_Foundation`
    /// (universal2: both arches).
    @Test func corpusAgreesWithObjdump() async throws {
        let paths = try Corpus.machOFiles()
        let (total, files) = try await Self.compareAll(paths, "corpus")
        #expect(total.differences.isEmpty)
        for module in ["_objc", "_Foundation"] {
            let path = try #require(paths.first { $0.contains("/objc_universal2/\(module).") }, "\(module) is not in the corpus")
            let agreement = try #require(files[path])
            #expect(agreement.slicesWithMetadata == 2, "\(module): \(agreement.slicesWithMetadata) slices with metadata")
        }
        #expect(total.slicesWithMetadata >= 4)
    }

    /// Every image of the objc fixture app (all four builds: chained images show raw
    /// chained pointers, opcode images symbols and strings) and every reader fixture.
    @Test func fixturesAgreeWithObjdump() async throws {
        var paths = FixtureApp.variants.flatMap { variant in
            ["objc", "Frameworks/Base.framework/Base", "Frameworks/Extras.framework/Extras", "Frameworks/Shapes.framework/Shapes"]
                .map { FixtureApp.buildDirectory.appendingPathComponent("\(variant)/objc.app/\($0)").path }
        }
        for path in paths { #expect(FileManager.default.fileExists(atPath: path), "\(path) is missing: run make fixtures") }
        if FileManager.default.fileExists(atPath: Paths.readerFixtures.path) {
            paths += try Corpus.machOFiles(under: Paths.readerFixtures)
        }
        let total = try await Self.compareAll(paths, "fixtures").total
        #expect(total.differences.isEmpty)
        #expect(total.slicesWithMetadata >= 16)
    }

    // MARK: Relative method lists

    static let relativeSource = """
        __attribute__((objc_root_class))
        @interface Root { int x; long z; }
        @property int y;
        - (int)foo;
        + (int)bar;
        @end
        @implementation Root
        - (int)foo { return 1; }
        + (int)bar { return 2; }
        @end
        @protocol P
        - (void)p;
        @end
        @interface Sub : Root <P>
        @property long w;
        @end
        @implementation Sub
        - (void)p {}
        - (long)w { return 3; }
        - (void)setW:(long)w {}
        @end
        @interface Root (Cat)
        - (void)c;
        @end
        @implementation Root (Cat)
        - (void)c {}
        @end

        """

    /// A small arm64 dylib linked with `-objc_relative_method_lists` (ld64.lld makes them
    /// for arm64 only), chained and opcode-based.
    @Test(arguments: ["-fixup_chains", "-no_fixup_chains"]) func relativeMethodListsAgreeWithObjdump(_ style: String) async throws {
        let directory = URL(fileURLWithPath: try Scratch.directory("objc-relative"))
        defer { Scratch.remove(directory.path) }
        let source = directory.appendingPathComponent("relative.m").path
        let object = directory.appendingPathComponent("relative.o").path
        let dylib = directory.appendingPathComponent("librelative.dylib").path
        try Self.relativeSource.write(toFile: source, atomically: true, encoding: .utf8)
        let clang = ProcessInfo.processInfo.environment["FIXTURE_CLANG"] ?? "/opt/swift/usr/bin/clang"
        let compiled = try await ProcessRunner.run(clang, ["-target", "arm64-apple-macos12", "-c", source, "-o", object], error: .captured)
        #expect(compiled.succeeded, "\(compiled.error)")
        let linked = try await ProcessRunner.run("/usr/lib/llvm-19/bin/ld64.lld", [
            "-arch", "arm64", "-platform_version", "macos", "12.0", "12.0", "-dylib", style, "-objc_relative_method_lists",
            "-undefined", "dynamic_lookup", object, "-o", dylib,
        ], error: .captured)
        #expect(linked.succeeded, "\(linked.error)")
        let text = try await Oracle.objdump(["--objc-meta-data", dylib])
        let agreement = try await Self.compare(dylib)
        #expect(agreement.differences.isEmpty, "\(agreement.differences)")
        if style == "-no_fixup_chains" {
            // An opcode image shows its relative lists (a chained one only raw class pointers).
            #expect(text.contains("(relative)"), "llvm-objdump shows no relative method list")
        }
        #expect(agreement.slicesWithMetadata == 1)
    }

    // MARK: Overlapping sections

    /// A `section_64` record at `address` of `size` bytes.
    static func section(_ index: Int, address: UInt64, size: UInt64) throws -> Section {
        var bytes = [UInt8](repeating: 0, count: Section.size)
        for (offset, byte) in Array("__s\(index)".utf8.prefix(16)).enumerated() { bytes[offset] = byte }
        for (offset, byte) in Array("__DATA".utf8).enumerated() { bytes[16 + offset] = byte }
        for index in 0..<8 {
            bytes[32 + index] = UInt8(truncatingIfNeeded: address >> (8 * UInt64(index)))
            bytes[40 + index] = UInt8(truncatingIfNeeded: size >> (8 * UInt64(index)))
        }
        return try Section(parsing: ByteView(bytes))
    }

    /// Sections overlapping every which way: the address map names, for every address
    /// tried, the first section in load command order that holds it (llvm's linear
    /// search), and 20,000 overlapping sections build it without a quadratic walk.
    @Test func overlappingSectionsResolveToTheFirstHolder() throws {
        var seed: UInt64 = 0x9e37_79b9_7f4a_7c15
        func next(_ bound: UInt64) -> UInt64 {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return (seed >> 33) % bound
        }
        for _ in 0..<50 {
            let sections = try (0..<Int(1 + next(12))).map { try Self.section($0, address: 0x1000 + next(0x100), size: 1 + next(0x80)) }
            let ranges = FileSections.firstCovering(sections)
            for address in UInt64(0xff0)..<0x1200 {
                let expected = sections.firstIndex { $0.contains(address: address) }
                let found = ranges.last { $0.start <= address }.flatMap { address < $0.end ? $0.section : nil }
                #expect(found == expected, "address 0x\(String(address, radix: 16))")
            }
        }
        let many = try (0..<20_000).map { try Self.section($0, address: 0x10000 + UInt64($0) * 8, size: 0x100000) }
        let ranges = FileSections.firstCovering(many)
        #expect(ranges.count == 20_000)
        #expect(ranges.first?.section == 0 && ranges.last?.section == 19_999)
    }

    // MARK: Damaged metadata

    static let shapes = FixtureApp.buildDirectory.appendingPathComponent("x86_64-opcodes/objc.app/Frameworks/Shapes.framework/Shapes").path

    /// `bytes` written to a scratch file, compared with llvm-objdump there.
    static func compareDamaged(_ bytes: [UInt8], _ name: String) async throws -> Agreement {
        let directory = URL(fileURLWithPath: try Scratch.directory("objc-damaged"))
        defer { Scratch.remove(directory.path) }
        let path = directory.appendingPathComponent(name).path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return try await compare(path)
    }

    /// The file offset of `address` in `image` (through the section holding it).
    static func fileOffset(_ image: MachOImage, _ address: UInt64) throws -> Int {
        let place = try #require(FileSections(image: image).place(address), "0x\(String(address, radix: 16)) is in no section")
        return Int(place.section.fileOffset) + Int(place.offset)
    }

    static func write32(_ value: UInt32, at offset: Int, in bytes: inout [UInt8]) {
        for index in 0..<4 { bytes[offset + index] = UInt8(truncatingIfNeeded: value >> (8 * UInt32(index))) }
    }

    static func write64(_ value: UInt64, at offset: Int, in bytes: inout [UInt8]) {
        for index in 0..<8 { bytes[offset + index] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(index))) }
    }

    /// The first class of `__objc_classlist`, its `class_ro_t` and metaclass, as stored.
    static func firstClass(_ image: MachOImage) throws -> (address: UInt64, cls: ObjCClass, ro: ObjCClassRO) {
        let sections = FileSections(image: image)
        let list = try #require(image.sections.first { $0.name == "__objc_classlist" })
        let address = try #require(sections.structure(at: list.address, length: 8)).view.u64(0)
        let cls = ObjCClass(parsing: try #require(sections.structure(at: address, length: ObjCClass.size)).view, at: address)
        let ro = ObjCClassRO(parsing: try #require(sections.structure(at: cls.roAddress, length: ObjCClassRO.size)).view)
        return (address, cls, ro)
    }

    /// The first method list of the first class or its metaclass.
    static func firstMethodList(_ image: MachOImage) throws -> UInt64 {
        let first = try firstClass(image)
        if first.ro.baseMethodsAddress != 0 { return first.ro.baseMethodsAddress }
        let sections = FileSections(image: image)
        let metaclass = ObjCClass(parsing: try #require(sections.structure(at: first.cls.isa, length: ObjCClass.size)).view, at: first.cls.isa)
        return ObjCClassRO(parsing: try #require(sections.structure(at: metaclass.roAddress, length: ObjCClassRO.size)).view).baseMethodsAddress
    }

    /// A method list count of 0xffffffff: both walk until the entries leave every section.
    @Test func hugeMethodListCountAgrees() async throws {
        var bytes = try Corpus.bytes(Self.shapes)
        let image = try MachOImage(parsing: bytes)
        let list = try Self.firstMethodList(image)
        #expect(list != 0)
        Self.write32(0xffff_ffff, at: try Self.fileOffset(image, list) + 4, in: &bytes)
        let agreement = try await Self.compareDamaged(bytes, "Shapes")
        #expect(agreement.differences.isEmpty, "\(agreement.differences)")
        #expect(agreement.rows > 249)
    }

    /// A metaclass that is not marked RO_META and whose isa leads back to its class: both
    /// print 100 metaclasses for the image and stop.
    @Test func metaclassCycleStopsAtObjdumpsDepth() async throws {
        var bytes = try Corpus.bytes(Self.shapes)
        let image = try MachOImage(parsing: bytes)
        let first = try Self.firstClass(image)
        let sections = FileSections(image: image)
        let metaclass = ObjCClass(parsing: try #require(sections.structure(at: first.cls.isa, length: ObjCClass.size)).view, at: first.cls.isa)
        Self.write64(first.address, at: try Self.fileOffset(image, first.cls.isa), in: &bytes)
        Self.write32(0, at: try Self.fileOffset(image, metaclass.roAddress), in: &bytes)
        let agreement = try await Self.compareDamaged(bytes, "Shapes")
        #expect(agreement.differences.isEmpty, "\(agreement.differences)")
        let text = try ObjdumpReport.render(path: "Shapes", bytes: bytes, tables: [.objc], arch: .all)
        #expect(text.components(separatedBy: "Meta Class\n").count - 1 == ObjCMetadataTable.metaclassLimit)
    }

    /// Past its entry budget a walk stops with one error naming the file and where it
    /// stopped (the budget, 4 entries per byte of the file, is met only by lists that
    /// lead into one another over and over; here a budget of 50 on an intact image).
    @Test func walksStopAtTheEntryBudget() throws {
        let bytes = try Corpus.bytes(Self.shapes)
        var table = ObjCMetadataTable(image: try MachOImage(parsing: bytes), entryBudget: 50)
        var out = ""
        do {
            try table.write(to: &out)
            Issue.record("the walk did not stop")
        } catch {
            #expect("\(error)".contains("more than 50 list entries"), "\(error)")
        }
        #expect(out.hasPrefix("Contents of (__DATA"))
        var unbounded = ObjCMetadataTable(image: try MachOImage(parsing: bytes))
        var full = ""
        try unbounded.write(to: &full)
        #expect(full.count > out.count)
    }

    /// Every byte of Shapes' `__objc_*` sections flipped in turn: each rendering ends in
    /// text or one error, and a sample of them agrees with llvm-objdump.
    @Test func everyDamagedByteRendersOrFailsInOneLine() async throws {
        let original = try Corpus.bytes(Self.shapes)
        let image = try MachOImage(parsing: original)
        var rendered = 0, refused = 0, sampled = Agreement()
        var sample: [[UInt8]] = []
        for section in image.sections where section.name.hasPrefix("__objc_") {
            let start = Int(section.fileOffset)
            for offset in start..<start + Int(section.size) {
                var bytes = original
                bytes[offset] ^= 0xff
                do {
                    _ = try ObjdumpReport.render(path: "Shapes", bytes: bytes, tables: [.objc], arch: .all)
                    rendered += 1
                } catch {
                    refused += 1
                    #expect(!"\(error)".contains("\n"))
                }
                if offset % 61 == 0 { sample.append(bytes) }
            }
        }
        #expect(rendered + refused > 500)
        for bytes in sample.prefix(12) {
            let agreement = try await Self.compareDamaged(bytes, "Shapes")
            sampled.rows += agreement.rows
            sampled.differences += agreement.differences
        }
        #expect(sampled.differences.isEmpty, "\(sampled.differences.prefix(3))")
        print("inspect --objc, damaged bytes: \(rendered) rendered, \(refused) refused; \(min(12, sample.count)) sampled copies, \(sampled.rows) rows agree with llvm-objdump")
    }
}
