import ClosureBuild
import ClosureFormat
import Dyld2
import Dyld3
import Foundation
import ClosureCache
import LaunchComparison
import LaunchPlan
import LoaderCore
import MachOReader
import StubRoot
import Testing
import TestSupport

/// Real Objective-C (pyobjc's `_objc` and `_Foundation` from the corpus) under a stub root:
/// the root's libobjc is a runtime of ours and its frameworks' classes are class objects,
/// so the Objective-C step runs, registers every class llvm-objdump lists and attaches
/// every category (all of `_objc`'s extend system classes).
@Suite(.serialized, .bounded) struct RealObjCTests {
    static let objcModule = Paths.bundledCorpus.path + "/objc_universal2/_objc.cpython-311-darwin.so"
    static let foundationModule = Paths.bundledCorpus.path + "/objc_universal2/_Foundation.cpython-311-darwin.so"
    /// An `__objc_imageinfo` and nothing else of Objective-C; imports nothing from libobjc.
    static let machSignalsModule = Paths.bundledCorpus.path + "/objc_universal2/_machsignals.cpython-311-darwin.so"

    /// The runtime's hash table lookup as `Fixtures/libSystem/objc/runtime.c` (`probe`)
    /// does it, over launch memory: the slot values from the name's FNV-1a 64 hash on,
    /// up to the first empty slot. `table` is 0 (selectors), 1 (class names), 2 (protocols).
    static func probe(_ name: [UInt8], table: Int, header: UInt64, space: ObjCAddressSpace) throws -> [UInt64] {
        let field = header + 56 + UInt64(table * 32)
        let slots = try space.u64(at: field + 8, what: "slots"), mask = try space.u64(at: field + 16, what: "mask")
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        var found: [UInt64] = []
        for step in 0...mask {
            let value = try space.u64(at: slots + ((hash &+ step) & mask) * 8, what: "slot")
            if value == 0 { break }
            found.append(value)
        }
        return found
    }

    /// The size column of `section` in llvm-objdump's `--section-headers` output, 0 when absent.
    static func sectionSize(_ section: String, of path: String, arch: String) async throws -> Int {
        let text = try await Oracle.objdump(["--section-headers", "--arch=\(arch)", path])
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ")
            if fields.count >= 3, fields[1] == section { return Int(fields[2], radix: 16) ?? -1 }
        }
        return 0
    }

    @Test(arguments: ["x86_64", "arm64"])
    func stepRunsOnPyObjCAndFillsTheRuntimeTables(arch: String) async throws {
        let graph = CorpusGraphTests.Graph(name: "pyobjc _objc", binaries: [Self.objcModule], arch: arch)
        let (root, roots) = try await CorpusGraphTests.prepare(graph)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let launch = try SlowPath.launch(LaunchOptions(roots: roots, arch: arch, root: root, run: false))
        defer { launch.memory.release() }
        #expect(launch.report.objcSkipped?.description == nil, "\(arch): \(launch.report.objcSkipped?.description ?? "")")
        #expect(launch.report.timings[.objc] != nil)

        var classes = 0, categories = 0, moduleCategories = 0
        for path in launch.report.images {
            classes += try await Self.sectionSize("__objc_classlist", of: path, arch: arch) / 8
            let listed = try await Self.sectionSize("__objc_catlist", of: path, arch: arch) / 8
            categories += listed
            if path == Self.objcModule { moduleCategories = listed }
        }
        // The counts the step wrote into the runtime's header (+40 classes, +48 categories).
        let runtime = try #require(launch.report.images.firstIndex { $0 == root + "/usr/lib/libobjc.A.dylib" })
        let image = try ImageFile.load(path: launch.report.images[runtime], arch: arch).image
        let tables = try #require(ObjCSections.runtimeTables(in: image))
        let header = launch.memory.images[runtime].base + tables.vmOffset
        let space = launch.memory.objcAddressSpace()
        #expect(try space.u64(at: header + 40, what: "class count") == UInt64(classes), "\(arch)")
        #expect(try space.u64(at: header + 48, what: "category count") == UInt64(categories), "\(arch)")
        #expect(classes > 22, "\(arch): the module's 22 classes and the stub classes it names")
        #expect(moduleCategories == 6 && categories == moduleCategories, "\(arch): every category extends a system class of the root")

        // Each category is attached to the class its `cls` field is bound to: llvm-objdump's
        // `__objc_catlist` gives the categories, its bind table the class symbol at +8.
        let module = try #require(launch.report.images.firstIndex(of: Self.objcModule))
        let meta = try await Oracle.objdump(["--objc-meta-data", "--arch=\(arch)", Self.objcModule])
        var categoryAddresses: [UInt64] = []
        var inCatList = false
        for line in meta.split(separator: "\n") {
            if line.hasPrefix("Contents of") { inCatList = line.contains("__objc_catlist") ; continue }
            let fields = line.split(separator: " ")
            // An entry: its address (16 hex digits), then the category's.
            if inCatList, fields.count >= 2, fields[0].count == 16, UInt64(fields[0], radix: 16) != nil, fields[1].hasPrefix("0x"),
               let value = UInt64(fields[1].dropFirst(2), radix: 16) {
                categoryAddresses.append(value)
            }
        }
        var boundClass: [UInt64: String] = [:]
        for line in try await Oracle.objdump(["--bind", "--arch=\(arch)", Self.objcModule]).split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count >= 7, fields[2].hasPrefix("0x"), let address = UInt64(fields[2].dropFirst(2), radix: 16),
                  fields.last!.hasPrefix("_OBJC_CLASS_$_") else { continue }
            boundClass[address] = String(fields.last!.dropFirst("_OBJC_CLASS_$_".count))
        }
        let expected = Dictionary(uniqueKeysWithValues: try categoryAddresses.map { ($0, try #require(boundClass[$0 + 8], "category at 0x\(String($0, radix: 16))")) })
        #expect(expected.count == 6)
        let moduleBase = launch.memory.images[module].base
        let preferred = launch.memory.images[module].plan.preferredBase
        var attached: [UInt64: String] = [:]
        let classTable = try space.u64(at: header + 24, what: "class table"), categoryTable = try space.u64(at: header + 32, what: "category table")
        for entry in 0..<UInt64(classes) {
            let slot = classTable + entry * 40
            let count = try space.u64(at: slot + 32, what: "category count")
            guard count > 0 else { continue }
            let name = String(decoding: try space.cString(at: try space.u64(at: slot + 16, what: "name"), what: "name"), as: UTF8.self)
            let first = try space.u64(at: slot + 24, what: "first category")
            for index in first..<(first + count) {
                attached[try space.u64(at: categoryTable + index * 8, what: "category") - moduleBase + preferred] = name
            }
        }
        #expect(attached == expected, "\(arch)")

        // The hash tables: each class llvm-objdump lists in an `__objc_classlist` is found by
        // its name (the first entry of that name in the probe is its own: no name is
        // defined twice here), and each selector reference's name leads to the string the
        // reference points to.
        var classNames: [UInt64: [UInt8]] = [:]
        for entry in 0..<UInt64(classes) {
            let slot = classTable + entry * 40
            classNames[try space.u64(at: slot, what: "class")] = try space.cString(at: try space.u64(at: slot + 16, what: "name"), what: "name")
        }
        #expect(Set(classNames.values).count == classes, "\(arch): one class per name")
        for (cls, name) in classNames {
            let entries = try Self.probe(name, table: 1, header: header, space: space)
            let named = try entries.first { try space.cString(at: try space.u64(at: $0 + 16, what: "name"), what: "name") == name }
            #expect(try named.map { try space.u64(at: $0, what: "class") } == cls, "\(arch) \(String(decoding: name, as: UTF8.self))")
        }
        #expect(try space.u64(at: header + 56 + 32 + 24, what: "class keys") >= UInt64(classes))
        var selectorReferences = 0
        for (index, path) in launch.report.images.enumerated() {
            guard let objc = try ObjCSections(image: try ImageFile.load(path: path, arch: arch).image), let refs = objc.selectorReferences else { continue }
            for slot in 0..<refs.pointerCount {
                let value = try space.u64(at: launch.memory.images[index].base + refs.vmOffset + UInt64(slot * 8), what: "selref")
                let name = try space.cString(at: value, what: "selector")
                let found = try Self.probe(name, table: 0, header: header, space: space)
                #expect(try found.first { try space.cString(at: $0, what: "selector") == name } == value, "\(arch) \(String(decoding: name, as: UTF8.self))")
                selectorReferences += 1
            }
        }
        #expect(selectorReferences == (try await Self.sectionSize("__objc_selrefs", of: Self.objcModule, arch: arch)) / 8)
    }

    /// pyobjc's `_machsignals` has an `__objc_imageinfo` and imports nothing from libobjc:
    /// on macOS its frameworks load the runtime. Under a stub root the framework stubs link
    /// the runtime's stub the same way, so the step runs, and both paths leave the same memory.
    @Test(arguments: ["x86_64", "arm64"])
    func stepRunsWhenOnlyFrameworksLinkTheRuntime(arch: String) async throws {
        let module = Self.machSignalsModule
        #expect(try await Self.sectionSize("__objc_imageinfo", of: module, arch: arch) == 8)
        #expect(try await Self.sectionSize("__objc_classlist", of: module, arch: arch) == 0)
        let used = try await Oracle.objdump(["--dylibs-used", "--arch=\(arch)", module])
        #expect(used.contains("Foundation.framework") && !used.contains("libobjc"), "\(used)")

        let graph = CorpusGraphTests.Graph(name: "pyobjc _machsignals", binaries: [module], arch: arch)
        let (root, roots) = try await CorpusGraphTests.prepare(graph)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let foundation = try await Oracle.objdump(["--dylibs-used", root + "/System/Library/Frameworks/Foundation.framework/Versions/C/Foundation"])
        #expect(foundation.contains("/usr/lib/libobjc.A.dylib"), "\(foundation)")
        let launch = try SlowPath.launch(LaunchOptions(roots: roots, arch: arch, root: root, run: false))
        defer { launch.memory.release() }
        #expect(launch.report.objcSkipped?.description == nil, "\(arch): \(launch.report.objcSkipped?.description ?? "")")
        #expect(launch.report.timings[.objc] != nil)
        #expect(launch.report.images.contains(root + "/usr/lib/libobjc.A.dylib"))

        let closure = try ClosureBuilder.build(roots: roots, arch: arch, root: root)
        #expect(closure.objc.totalWrites > 0)
        let comparison = try LaunchComparison.run(options: LaunchOptions(roots: roots, arch: arch, root: root, run: false),
                                                  closure: closure, closurePath: "(built in memory)")
        #expect(comparison.differences.isEmpty, "\(arch): \(comparison.differences.prefix(3))")
    }

    /// Every class a stub exports (`_OBJC_CLASS_$_X`) is a class object llvm-objdump reads
    /// in its `__objc_classlist` under the name X; the runtime's functions are code.
    @Test func stubClassesAreClassObjectsObjdumpReads() async throws {
        let graph = CorpusGraphTests.Graph(name: "pyobjc _objc", binaries: [Self.objcModule], arch: "x86_64")
        let (root, _) = try await CorpusGraphTests.prepare(graph)
        defer { try? FileManager.default.removeItem(atPath: root) }
        var stubsWithClasses = 0
        for stub in ["/usr/lib/libobjc.A.dylib", "/System/Library/Frameworks/Foundation.framework/Versions/C/Foundation"] {
            let path = root + stub
            let exports = try await Oracle.objdump(["--exports-trie", path])
            let exported = Set(exports.split(separator: "\n").compactMap { line -> String? in
                guard let name = line.split(separator: " ").last, name.hasPrefix("_OBJC_CLASS_$_") else { return nil }
                return String(name.dropFirst("_OBJC_CLASS_$_".count))
            })
            let meta = try await Oracle.objdump(["--objc-meta-data", path])
            var listed = Set<String>()
            var inClassList = false
            for line in meta.split(separator: "\n") {
                if line.hasPrefix("Contents of") { inClassList = line.contains("__objc_classlist") }
                let fields = line.split(separator: " ")
                // The class's own `name` line (the first after its `data` line).
                if inClassList, fields.count == 3, fields[0] == "name", !listed.contains(String(fields[2])) { listed.insert(String(fields[2])) }
            }
            #expect(!exported.isEmpty, "\(stub)")
            #expect(listed == exported, "\(stub): listed-only \(listed.subtracting(exported)), exported-only \(exported.subtracting(listed))")
            stubsWithClasses += exported.isEmpty ? 0 : 1
        }
        #expect(stubsWithClasses == 2)
        // The runtime's functions lie in __TEXT,__text (they trap); its data does not.
        let runtime = try ImageFile.load(path: root + "/usr/lib/libobjc.A.dylib", arch: "x86_64").image
        let text = try #require(runtime.segments.first { $0.name == "__TEXT" }?.sections.first { $0.name == "__text" })
        let trie = try #require(try runtime.exportTrie())
        for name in ["_objc_msgSend", "_class_addMethod", "_sel_registerName", "_OBJC_CLASS_$_NSObject"] {
            let symbol = try #require(try trie.lookup(name), "\(name)")
            guard case let .image(address) = symbol.definition else { Issue.record("\(name): \(symbol.definition)"); continue }
            let inText = address >= text.address - runtime.preferredLoadAddress && address < text.address - runtime.preferredLoadAddress + text.size
            #expect(inText == !name.hasPrefix("_OBJC_"), "\(name) at 0x\(String(address, radix: 16))")
        }
    }

    /// Protocols are uniqued by name across images: `_objc` and `_Foundation` both define
    /// `NSCopying`; the one of the image loaded last is canonical, its isa is the runtime's
    /// `Protocol` class, every `@protocol` reference to that name points to it, and both paths
    /// write the same memory.
    @Test(arguments: ["x86_64", "arm64"])
    func protocolsAreUniquedAcrossImages(arch: String) async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("dyld3-protocols-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let plan = try StubRootPlan(binaries: [Self.foundationModule, Self.objcModule], arches: [arch], root: root)
        #expect(plan.unresolved.isEmpty, "\(plan.unresolved)")
        try await plan.write()
        let roots = [StubRootPlan.hostPath(root: root), Self.foundationModule, Self.objcModule]
        let launch = try SlowPath.launch(LaunchOptions(roots: roots, arch: arch, root: root, run: false))
        defer { launch.memory.release() }
        let images = launch.report.images
        let space = launch.memory.objcAddressSpace()
        let runtime = try #require(images.firstIndex(of: root + "/usr/lib/libobjc.A.dylib"))
        let trie = try #require(try ImageFile.load(path: images[runtime], arch: arch).image.exportTrie())
        guard case let .image(protocolClassOffset) = try #require(try trie.lookup("_OBJC_CLASS_$_Protocol")).definition else {
            Issue.record("Protocol is not a class of the runtime"); return
        }
        let protocolClass = launch.memory.images[runtime].base + protocolClassOffset

        // name → the protocols defining it, in load order, and every reference's value.
        var definitions: [[UInt8]: [UInt64]] = [:], references: [[UInt8]: Set<UInt64>] = [:]
        var listed = 0, referenceCount = 0
        for (index, path) in images.enumerated() {
            listed += try await Self.sectionSize("__objc_protolist", of: path, arch: arch) / 8
            let image = try ImageFile.load(path: path, arch: arch).image
            guard let objc = try ObjCSections(image: image) else { continue }
            let base = launch.memory.images[index].base
            for slot in 0..<(objc.protocolList?.pointerCount ?? 0) {
                let proto = try space.u64(at: base + objc.protocolList!.vmOffset + UInt64(slot * 8), what: "protolist")
                definitions[try space.cString(at: try space.u64(at: proto + 8, what: "name"), what: "name"), default: []].append(proto)
            }
            for slot in 0..<(objc.protocolReferences?.pointerCount ?? 0) {
                let proto = try space.u64(at: base + objc.protocolReferences!.vmOffset + UInt64(slot * 8), what: "protoref")
                references[try space.cString(at: try space.u64(at: proto + 8, what: "name"), what: "name"), default: []].insert(proto)
                referenceCount += 1
            }
        }
        #expect(definitions.values.reduce(0) { $0 + $1.count } == listed, "\(arch): every protolist entry llvm-objdump counts")
        let copying = try #require(definitions[Array("NSCopying".utf8)])
        #expect(copying.count == 2, "\(arch): NSCopying in both modules")
        #expect(referenceCount > 40)
        var rewrittenAcross = 0
        for (name, protocols) in definitions {
            let canonical = protocols.last!
            #expect(try space.u64(at: canonical, what: "isa") == protocolClass, "\(String(decoding: name, as: UTF8.self))")
            for other in protocols.dropLast() { #expect(try space.u64(at: other, what: "isa") == 0) }
            if let refs = references[name] {
                #expect(refs == [canonical], "\(arch) \(String(decoding: name, as: UTF8.self)): references \(refs), canonical \(canonical)")
                if protocols.count > 1 { rewrittenAcross += 1 }
            }
        }
        #expect(rewrittenAcross > 0, "\(arch): no reference was rewritten to another image's protocol")
        // The protocol hash table finds each name's canonical protocol (runtime.c's probe).
        let tables = try #require(ObjCSections.runtimeTables(in: try ImageFile.load(path: images[runtime], arch: arch).image))
        let header = launch.memory.images[runtime].base + tables.vmOffset
        #expect(try space.u64(at: header + 56 + 64 + 24, what: "protocol keys") == UInt64(definitions.count))
        for (name, protocols) in definitions {
            let found = try Self.probe(name, table: 2, header: header, space: space)
            let named = try found.first { try space.cString(at: try space.u64(at: $0 + 8, what: "name"), what: "name") == name }
            #expect(named == protocols.last, "\(arch) \(String(decoding: name, as: UTF8.self))")
        }

        let closure = try ClosureBuilder.build(roots: roots, arch: arch, root: root)
        let comparison = try LaunchComparison.run(options: LaunchOptions(roots: roots, arch: arch, root: root, run: false),
                                                  closure: closure, closurePath: "(built in memory)")
        #expect(comparison.differences.isEmpty, "\(arch): \(comparison.differences.prefix(3))")
    }

    /// A launch that skips the step says why: no metadata at all, or metadata and no
    /// runtime of ours.
    @Test func skippedStepSaysWhy() async throws {
        try await CorpusGraphTests.withKiwisolverLaunch(run: false) { launch, options in
            #expect(launch.report.objcSkipped?.description == "no image has Objective-C metadata (__objc_imageinfo)")
            #expect(launch.report.timings[.objc] == nil)
            let closure = try ClosureBuilder.build(roots: options.roots, arch: options.arch, root: options.root)
            let fast = try FastPath.launch(closure, closurePath: "(built in memory)", request: options)
            fast.memory.release()
            #expect(fast.report.objcSkipped?.description.hasPrefix("the closure records no Objective-C step") == true)
        }

        let module = try ImageFile.load(path: Self.objcModule, arch: "x86_64").image
        let otherRuntime = "/usr/lib/libobjc.A.dylib"
        #expect(!ObjCSetup.isNeeded(images: [module]))
        #expect(ObjCSetup.skipReason(images: [module, module], paths: [Self.objcModule, otherRuntime]).description
            == "2 of 2 images have Objective-C metadata, but no image is a runtime this loader fills in (a libobjc with "
            + "__DATA,__objc_fxtables): \(otherRuntime) is another runtime; a root written by `dyld3 stub-root` holds one")
    }

    /// The digest rewrites the locations fixed up with pointers, never a data word for its
    /// value: words planted at three slides, each inside one launch's region, leave the
    /// digests of the three launches equal; a different planted word changes it.
    @Test func digestNeverRewritesDataWordsInsideTheRegion() async throws {
        let graph = CorpusGraphTests.Graph(name: "pyobjc _Foundation", binaries: [Self.foundationModule], arch: "x86_64")
        let (root, roots) = try await CorpusGraphTests.prepare(graph)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let closure = try ClosureBuilder.build(roots: roots, arch: graph.arch, root: root)
        let fixups = try closure.images.indices.map { try closure.fixups(ofImage: $0) }
        let objc = try closure.images.indices.map { closure.objc.bindRuns.isEmpty ? [] : try closure.objcWrites(ofImage: $0) }
        let pointers = LaunchDigest.slideDependentLocations(fixups, then: objc)
        let slides: [UInt64] = [0x1_0000_0000, 0x2345_6780_0000, 0x3fff_0000_0000]
        var launches: [Launch] = []
        defer { for launch in launches { launch.memory.release() } }
        for slide in slides {
            launches.append(try SlowPath.launch(LaunchOptions(roots: roots, arch: graph.arch, root: root, slide: slide, run: false)))
        }
        // dyld3's digest, from its closure, at another slide: the same.
        let fast = try FastPath.launch(closure, closurePath: "(built in memory)", request: LaunchOptions(
            roots: roots, arch: graph.arch, root: root, slide: 0x1234_5000_0000, run: false))
        fast.memory.release()
        #expect(fast.report.digest != nil && fast.report.digest == launches[0].report.digest)
        // The module's first three zero words of __DATA that no fixup writes.
        let module = try #require(launches[0].report.images.firstIndex(of: Self.foundationModule))
        let plan = launches[0].memory.images[module].plan
        let data = try #require(plan.segments.first { $0.name == "__DATA" })
        let written = Set(fixups[module].map(\.vmOffset) + objc[module].map(\.vmOffset))
        var slots: [UInt64] = []
        var offset = data.vmOffset
        while slots.count < slides.count, offset + 8 <= data.vmOffset + data.vmSize {
            if !written.contains(offset), try launches.allSatisfy({ try $0.memory.load(image: module, vmOffset: offset) == 0 }) { slots.append(offset) }
            offset += 8
        }
        #expect(slots.count == slides.count)
        let planted = launches.map { $0.memory.regionBase + 0x40 }
        var digests: [UInt64] = []
        for launch in launches {
            #expect(launch.memory.writableDigest(slideDependent: pointers) == launch.report.digest, "the launch's own digest follows the closure's fixups")
            for (slot, value) in zip(slots, planted) { try launch.memory.store(value, image: module, vmOffset: slot) }
            #expect(planted.contains { $0 >= launch.memory.regionBase && $0 - launch.memory.regionBase < launch.memory.regionSize })
            digests.append(launch.memory.writableDigest(slideDependent: pointers))
        }
        #expect(Set(digests).count == 1, "\(digests.map { String($0, radix: 16) })")
        try launches[0].memory.store(planted[0] + 8, image: module, vmOffset: slots[0])
        #expect(launches[0].memory.writableDigest(slideDependent: pointers) != digests[0], "the planted words are part of the digest")
    }
}
