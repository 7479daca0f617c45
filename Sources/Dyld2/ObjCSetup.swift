import LoaderCore
import MachOReader
import LaunchPlan
import LaunchMemory

/// The Objective-C step of a launch, after bind and before the initializers, as the
/// runtime's `map_images` and `load_images` do it (docs/objc.md has every rule): selectors
/// and protocols uniqued, the class table with each class's categories and the hash tables
/// written into our runtime's `__DATA,__objc_fxtables`, and the `+load` methods scheduled.
///
/// It reads fixed-up memory and yields writes as ``ResolvedFixup``s and `+load` calls as
/// ``ObjCLoadCall``s: the slow path stores the writes at once, the closure builder records
/// them. Nil when the graph has no runtime of ours or no image has `__objc_imageinfo`.
package struct ObjCSetup: Sendable {
    /// Per image, in load order: the words to write (after the image's own fixups).
    package var writes: [[ResolvedFixup]]
    /// `+load` calls in the order they run.
    package var loads: [ObjCLoadCall]
    package var selectorReferences = 0
    package var uniqueSelectors = 0
    package var classes = 0
    package var categories = 0
    /// Protocols of every `__objc_protolist`, and how many names they have (the canonical ones).
    package var protocols = 0
    package var uniqueProtocols = 0
    package var protocolReferences = 0

    /// Writes every word into `memory` (each checked to lie in a writable segment).
    package func store(into memory: LaunchMemory) throws(LoadError) {
        let bases = memory.images.map(\.base)
        for (index, imageWrites) in writes.enumerated() where !imageWrites.isEmpty {
            let writer = memory.writer(image: index)
            for write in imageWrites { try writer.store(write.value(imageBase: bases[index], imageBases: bases), vmOffset: write.vmOffset) }
        }
    }

    /// A bound on superclass chains (longer is a cycle or corrupt metadata).
    static let maxSuperclassDepth = 4096

    /// Whether the graph needs the step at all: it holds our runtime and some image has metadata.
    package static func isNeeded(images: [MachOImage]) -> Bool {
        images.contains { ObjCSections.runtimeTables(in: $0) != nil } && images.contains(where: hasMetadata)
    }

    /// Whether `image` has `__objc_imageinfo`, or a malformed one (which ``compute(images:paths:initializerOrder:memory:)`` reports).
    private static func hasMetadata(_ image: MachOImage) -> Bool {
        do { return try ObjCSections(image: image) != nil } catch { return true }
    }

    /// Why the step does not run on a graph ``isNeeded(images:)`` refuses.
    package static func skipReason(images: [MachOImage], paths: [String]) -> ObjCSkipReason {
        let withMetadata = images.filter(hasMetadata)
        guard !withMetadata.isEmpty else { return .noMetadata }
        return .noRuntime(withMetadata: withMetadata.count, of: images.count,
                          otherRuntime: paths.first { $0.hasSuffix("/libobjc.A.dylib") })
    }

    package static func compute(images: [MachOImage], paths: [String], initializerOrder: [Int], memory: LaunchMemory) throws(LoadError) -> ObjCSetup? {
        var sections: [ObjCSections?] = []
        var runtime: (image: Int, tables: ObjCSections.Range)?
        for (index, image) in images.enumerated() {
            sections.append(try LoadError.reading(paths[index]) { () throws(MachOError) in try ObjCSections(image: image) })
            if runtime == nil, let tables = ObjCSections.runtimeTables(in: image) { runtime = (index, tables) }
        }
        guard let runtime, sections.contains(where: { $0 != nil }) else { return nil }
        var builder = ObjCSetupBuilder(space: memory.objcAddressSpace(), bases: memory.images.map(\.base), sections: sections)
        do throws(MachOError) {
            try builder.uniqueSelectors()
            try builder.buildClassTable()
            try builder.uniqueProtocols(runtimeImage: runtime.image)
            try builder.writeTables(runtimeImage: runtime.image, tables: runtime.tables)
            try builder.scheduleLoads(initializerOrder: initializerOrder)
            try builder.writeHashTables(runtimeImage: runtime.image, tables: runtime.tables)
        } catch {
            guard case let .objCMetadata(image, address, what) = error.reason else { throw .malformed(error) }
            let offset = address &- memory.images[image ?? runtime.image].base
            throw .unusable(path: paths[image ?? runtime.image], reason: "offset \(hex(offset)): \(what)")
        }
        return builder.result
    }
}

/// The work of ``ObjCSetup/compute(images:paths:initializerOrder:memory:)``, in the order it is done.
struct ObjCSetupBuilder {
    let space: ObjCAddressSpace
    let bases: [UInt64]
    let sections: [ObjCSections?]
    var result: ObjCSetup
    /// Selector name → its canonical string, and the names in the order met.
    private var canonical: [[UInt8]: ImageLocation] = [:]
    private var selectorNames: [[UInt8]] = []
    /// Registered classes in the runtime's order, and where each is in `classEntries`.
    private var classEntries: [(cls: ImageLocation, metaclass: ImageLocation, name: ImageLocation, categories: [ImageLocation])] = []
    private var classIndex: [ImageLocation: Int] = [:]
    /// The names each class entry is found by: its class's, and its metaclass's when that differs.
    private var classKeys: [(name: [UInt8], entry: Int)] = []
    /// Where the class entries are (set by ``writeTables(runtimeImage:tables:)``).
    private var classTable: ImageLocation?
    /// Protocol name → its canonical `protocol_t`, and the names in registration order.
    private var canonicalProtocols: [[UInt8]: ImageLocation] = [:]
    private var protocolNames: [[UInt8]] = []

    init(space: ObjCAddressSpace, bases: [UInt64], sections: [ObjCSections?]) {
        self.space = space
        self.bases = bases
        self.sections = sections
        result = ObjCSetup(writes: Array(repeating: [], count: bases.count), loads: [])
    }

    /// Images with metadata in the runtime's order: objc4 `map_images_nolock` walks dyld's list backwards.
    private var runtimeOrder: [Int] { sections.indices.reversed().filter { sections[$0] != nil } }

    private func locate(_ address: UInt64, _ what: String) throws(MachOError) -> ImageLocation {
        guard let (image, offset) = space.location(of: address) else {
            throw MachOError(image: nil, address: address, what: "\(what) points to \(hex(address)), outside every image")
        }
        return ImageLocation(image: image, offset: offset)
    }

    private func address(_ location: ImageLocation) -> UInt64 { bases[location.image] &+ location.offset }

    /// The pointers of one list section of image `image`.
    private func pointers(_ range: ObjCSections.Range?, image: Int, _ what: String) throws(MachOError) -> [UInt64] {
        guard let range else { return [] }
        let start = bases[image] &+ range.vmOffset
        let view = try space.view(at: start, length: Int(range.size), what: what)
        return (0..<range.pointerCount).map { (try? view.u64($0 * 8)) ?? 0 }
    }

    private mutating func write(_ value: ResolvedFixup.Kind, at location: ImageLocation) {
        result.writes[location.image].append(ResolvedFixup(vmOffset: location.offset, kind: value))
    }

    private mutating func writePointer(to target: ImageLocation, at location: ImageLocation) {
        write(.bind(.image(target.image, offset: target.offset), addend: 0), at: location)
    }

    /// The canonical string for the name at `stringAddress`, registering it when new.
    private mutating func canonicalSelector(at stringAddress: UInt64) throws(MachOError) -> ImageLocation {
        let name = try space.cString(at: stringAddress, what: "selector name")
        if let found = canonical[name] { return found }
        let location = try locate(stringAddress, "selector name")
        canonical[name] = location
        selectorNames.append(name)
        return location
    }

    /// Rewrites the selector pointer in `slot` to its canonical string, unless it already is.
    private mutating func uniqueSlot(_ slot: UInt64) throws(MachOError) {
        let value = try space.u64(at: slot, what: "selector reference")
        let target = try canonicalSelector(at: value)
        if address(target) != value { writePointer(to: target, at: try locate(slot, "selector reference")) }
    }

    /// Selector references first, images in load order (the first reference to a name gives
    /// its canonical string), then the names of pointer method lists.
    mutating func uniqueSelectors() throws(MachOError) {
        for image in sections.indices {
            for slotIndex in 0..<(sections[image]?.selectorReferences?.pointerCount ?? 0) {
                try uniqueSlot(bases[image] &+ sections[image]!.selectorReferences!.vmOffset &+ UInt64(slotIndex * 8))
                result.selectorReferences += 1
            }
        }
        for image in sections.indices {
            guard let objc = sections[image] else { continue }
            for cls in try pointers(objc.classList, image: image, "__objc_classlist") {
                let object = try ObjCClass(in: space, at: cls)
                for ro in [object.roAddress, try ObjCClass(in: space, at: object.isa).roAddress] {
                    try uniqueMethodNames(ObjCClassRO(in: space, at: ro).baseMethodsAddress)
                }
            }
            for category in try pointers(objc.categoryList, image: image, "__objc_catlist") {
                let parsed = try ObjCCategory(in: space, at: category)
                try uniqueMethodNames(parsed.instanceMethodsAddress)
                try uniqueMethodNames(parsed.classMethodsAddress)
            }
            for proto in try pointers(objc.protocolList, image: image, "__objc_protolist") {
                for list in try ObjCProtocol(in: space, at: proto).methodListAddresses { try uniqueMethodNames(list) }
            }
        }
        result.uniqueSelectors = canonical.count
    }

    /// Relative lists name their selectors through selector references (already unique).
    private mutating func uniqueMethodNames(_ list: UInt64) throws(MachOError) {
        guard list != 0 else { return }
        let methods = try ObjCMethodList(in: space, at: list)
        guard !methods.isRelative else { return }
        for index in 0..<methods.count { try uniqueSlot(methods.method(index).nameSlot) }
    }

    /// Classes registered in the runtime's order (per image, `__objc_classlist` order), then
    /// categories attached likewise; one whose class is 0 or unregistered is not attached.
    mutating func buildClassTable() throws(MachOError) {
        for image in runtimeOrder {
            for cls in try pointers(sections[image]!.classList, image: image, "__objc_classlist") {
                let object = try ObjCClass(in: space, at: cls)
                let ro = try ObjCClassRO(in: space, at: object.roAddress)
                let location = try locate(cls, "class")
                let name = try space.cString(at: ro.nameAddress, what: "class name")
                let metaclassName = try space.cString(
                    at: try ObjCClassRO(in: space, at: try ObjCClass(in: space, at: object.isa).roAddress).nameAddress, what: "metaclass name")
                classKeys.append((name, classEntries.count))
                if metaclassName != name { classKeys.append((metaclassName, classEntries.count)) }
                classIndex[location] = classEntries.count
                classEntries.append((location, try locate(object.isa, "metaclass"), try locate(ro.nameAddress, "class name"), []))
            }
        }
        for image in runtimeOrder {
            for category in try pointers(sections[image]!.categoryList, image: image, "__objc_catlist") {
                let parsed = try ObjCCategory(in: space, at: category)
                guard parsed.classAddress != 0, let index = classIndex[try locate(parsed.classAddress, "category's class")] else { continue }
                classEntries[index].categories.append(try locate(category, "category"))
                result.categories += 1
            }
        }
        result.classes = classEntries.count
    }

    /// Protocols uniqued by name as dyld3's closure protocol table and objc4's `readProtocol`
    /// do: in the runtime's order the first of a name is canonical (of two images, the one
    /// loaded last), its isa set to the runtime's `Protocol` class if registered. Then every
    /// `__objc_protorefs` slot is rewritten to its name's canonical protocol (objc4
    /// `remapProtocolRef`); one to a name no list has keeps its value.
    mutating func uniqueProtocols(runtimeImage: Int) throws(MachOError) {
        var protocolClass: ImageLocation?
        for entry in classEntries where entry.cls.image == runtimeImage {
            if try space.cString(at: address(entry.name), what: "class name") == ObjCSetupBuilder.protocolClassName {
                protocolClass = entry.cls
                break
            }
        }
        for image in runtimeOrder {
            for proto in try pointers(sections[image]!.protocolList, image: image, "__objc_protolist") {
                let parsed = try ObjCProtocol(in: space, at: proto)
                let name = try space.cString(at: parsed.nameAddress, what: "protocol name")
                result.protocols += 1
                guard canonicalProtocols[name] == nil else { continue }
                let location = try locate(proto, "protocol")
                canonicalProtocols[name] = location
                protocolNames.append(name)
                if let protocolClass, parsed.isa != address(protocolClass) { writePointer(to: protocolClass, at: location) }
            }
        }
        result.uniqueProtocols = canonicalProtocols.count
        for image in sections.indices {
            guard let references = sections[image]?.protocolReferences else { continue }
            for slotIndex in 0..<references.pointerCount {
                let slot = bases[image] &+ references.vmOffset &+ UInt64(slotIndex * 8)
                let value = try space.u64(at: slot, what: "protocol reference")
                result.protocolReferences += 1
                guard value != 0 else { continue }
                let name = try space.cString(at: try ObjCProtocol(in: space, at: value).nameAddress, what: "protocol name")
                guard let canonical = canonicalProtocols[name], address(canonical) != value else { continue }
                writePointer(to: canonical, at: try locate(slot, "protocol reference"))
            }
        }
    }

    private static let protocolClassName = Array("Protocol".utf8)

    /// The runtime's tables: header counts, then each class entry (class, metaclass, name,
    /// first category, category count: 5 words) and the category pointers, latest attached first.
    mutating func writeTables(runtimeImage: Int, tables: ObjCSections.Range) throws(MachOError) {
        let header = bases[runtimeImage] &+ tables.vmOffset
        let word = try headerWords(runtimeImage: runtimeImage, tables: tables)
        guard UInt64(classEntries.count) <= word(1), UInt64(result.categories) <= word(2) else {
            throw MachOError(image: runtimeImage, address: header,
                            what: "\(classEntries.count) classes and \(result.categories) categories exceed the runtime's capacity (\(word(1)), \(word(2)))")
        }
        let classTable = try locate(word(3), "runtime class table")
        self.classTable = classTable
        let categoryTable = try locate(word(4), "runtime category table")
        _ = try space.view(at: word(3), length: classEntries.count * ObjCRuntimeTables.classEntrySize, what: "runtime class table")
        _ = try space.view(at: word(4), length: result.categories * 8, what: "runtime category table")
        guard classTable.image == runtimeImage, categoryTable.image == runtimeImage else {
            throw MachOError(image: runtimeImage, address: header, what: "runtime tables point outside the runtime")
        }
        let headerLocation = ImageLocation(image: runtimeImage, offset: tables.vmOffset)
        write(.bind(.absolute(UInt64(classEntries.count)), addend: 0), at: headerLocation.advanced(by: 40))
        write(.bind(.absolute(UInt64(result.categories)), addend: 0), at: headerLocation.advanced(by: 48))
        var nextCategory = 0
        for (index, entry) in classEntries.enumerated() {
            let slot = classTable.advanced(by: UInt64(index * ObjCRuntimeTables.classEntrySize))
            writePointer(to: entry.cls, at: slot)
            writePointer(to: entry.metaclass, at: slot.advanced(by: 8))
            writePointer(to: entry.name, at: slot.advanced(by: 16))
            if !entry.categories.isEmpty {
                write(.bind(.absolute(UInt64(nextCategory)), addend: 0), at: slot.advanced(by: 24))
                write(.bind(.absolute(UInt64(entry.categories.count)), addend: 0), at: slot.advanced(by: 32))
            }
            for category in entry.categories.reversed() {
                writePointer(to: category, at: categoryTable.advanced(by: UInt64(nextCategory * 8)))
                nextCategory += 1
            }
        }
    }

    /// The runtime's header, as words (its magic checked).
    private func headerWords(runtimeImage: Int, tables: ObjCSections.Range) throws(MachOError) -> (Int) -> UInt64 {
        let header = bases[runtimeImage] &+ tables.vmOffset
        let view = try space.view(at: header, length: ObjCRuntimeTables.headerSize, what: "runtime tables header")
        let word = { (index: Int) -> UInt64 in (try? view.u64(index * 8)) ?? 0 }
        guard word(0) == ObjCRuntimeTables.magic else {
            throw MachOError(image: runtimeImage, address: header,
                            what: "runtime tables have magic \(hex(word(0))), not OBJCTAB2 (\(hex(ObjCRuntimeTables.magic))): "
                                + "a libobjc of another layout; rebuild it (a stub root: write it again with `dyld3 stub-root`)")
        }
        return word
    }

    /// The runtime's three hash tables (``ObjCHashTable``): selectors, class names (each entry
    /// under its class's and metaclass's names, in registration order, so the probe meets the
    /// first registered first) and protocols. Per table its mask and count in the header and
    /// one pointer per used slot.
    mutating func writeHashTables(runtimeImage: Int, tables: ObjCSections.Range) throws(MachOError) {
        let word = try headerWords(runtimeImage: runtimeImage, tables: tables)
        let header = ImageLocation(image: runtimeImage, offset: tables.vmOffset)
        let headerAddress = address(header)
        let classTable = self.classTable
        let contents: [(what: String, keys: [[UInt8]], value: (Int) -> ImageLocation?)] = [
            ("selector", selectorNames, { [canonical, selectorNames] in canonical[selectorNames[$0]] }),
            ("class name", classKeys.map(\.name), { [classKeys] in
                classTable?.advanced(by: UInt64(classKeys[$0].entry * ObjCRuntimeTables.classEntrySize)) }),
            ("protocol", protocolNames, { [canonicalProtocols, protocolNames] in canonicalProtocols[protocolNames[$0]] }),
        ]
        for (index, table) in contents.enumerated() {
            let field = ObjCRuntimeTables.hashTablesOffset + index * ObjCRuntimeTables.hashTableSize
            let reserved = word(field / 8), slots = word(field / 8 + 1)
            guard let layout = ObjCHashTable(keys: table.keys, reserved: reserved) else {
                throw MachOError(image: runtimeImage, address: headerAddress &+ UInt64(field),
                                what: "\(table.keys.count) \(table.what) keys need a hash table of \(ObjCHashTable.capacity(for: table.keys.count)) slots, "
                                    + "the runtime reserves \(reserved): a libobjc with a larger \(table.what) table, or fewer names")
            }
            guard !table.keys.isEmpty else { continue }
            let slotTable = try locate(slots, "runtime \(table.what) table")
            _ = try space.view(at: slots, length: layout.capacity * 8, what: "runtime \(table.what) table")
            guard slotTable.image == runtimeImage else {
                throw MachOError(image: runtimeImage, address: headerAddress &+ UInt64(field), what: "runtime \(table.what) table points outside the runtime")
            }
            write(.bind(.absolute(UInt64(layout.capacity - 1)), addend: 0), at: header.advanced(by: UInt64(field + 16)))
            write(.bind(.absolute(UInt64(table.keys.count)), addend: 0), at: header.advanced(by: UInt64(field + 24)))
            for (key, slot) in layout.slots.enumerated() {
                guard let target = table.value(key) else { continue }
                writePointer(to: target, at: slotTable.advanced(by: UInt64(slot * 8)))
            }
        }
    }

    /// `+load` calls, images in initializer order: `__objc_nlclslist` classes (superclasses
    /// first, each once), then `__objc_nlcatlist` categories whose class is present (objc4
    /// `prepare_load_methods`).
    mutating func scheduleLoads(initializerOrder: [Int]) throws(MachOError) {
        var scheduled: Set<UInt64> = []
        for image in initializerOrder where image < sections.count {
            guard let objc = sections[image] else { continue }
            for cls in try pointers(objc.nonLazyClassList, image: image, "__objc_nlclslist") {
                let chain = try ObjCClass.superclassChain(in: space, from: cls, limit: ObjCSetup.maxSuperclassDepth) { scheduled.contains($0) }
                scheduled.formUnion(chain)
                for cls in chain.reversed() {
                    let metaclass = try ObjCClass(in: space, at: try ObjCClass(in: space, at: cls).isa)
                    let methods = try ObjCClassRO(in: space, at: metaclass.roAddress).baseMethodsAddress
                    try scheduleLoad(from: methods, cls: cls, image: image)
                }
            }
            for category in try pointers(objc.nonLazyCategoryList, image: image, "__objc_nlcatlist") {
                let parsed = try ObjCCategory(in: space, at: category)
                guard parsed.classAddress != 0 else { continue }
                try scheduleLoad(from: parsed.classMethodsAddress, cls: parsed.classAddress, image: image)
            }
        }
    }

    private static let loadName = Array("load".utf8)

    private mutating func scheduleLoad(from list: UInt64, cls: UInt64, image: Int) throws(MachOError) {
        guard list != 0 else { return }
        let methods = try ObjCMethodList(in: space, at: list)
        for index in 0..<methods.count {
            let method = methods.method(index)
            let selector = try space.u64(at: method.nameSlot, what: "method name")
            guard try space.cString(at: selector, what: "method name") == ObjCSetupBuilder.loadName else { continue }
            result.loads.append(ObjCLoadCall(
                image: image, method: try locate(method.imp, "+load"), cls: try locate(cls, "class"),
                selector: try canonicalSelector(at: selector)))
            return
        }
    }
}

/// The layout of our runtime's tables (`Fixtures/libSystem/objc/objc-runtime.h`).
enum ObjCRuntimeTables {
    /// "OBJCTAB2", little-endian.
    static let magic: UInt64 = 0x3242_4154_434a_424f
    /// magic, class capacity, category capacity, class table, category table, class count,
    /// category count; then three hash tables (selectors, class names, protocols) of four
    /// words each: reserved slots, slot array, mask, count.
    static let headerSize = 152
    static let hashTablesOffset = 56
    static let hashTableSize = 32
    /// class, metaclass, name, first category, category count.
    static let classEntrySize = 40
}

extension ImageLocation {
    func advanced(by bytes: UInt64) -> ImageLocation { ImageLocation(image: image, offset: offset &+ bytes) }
}

/// Where the keys of one of the runtime's hash tables go: FNV-1a 64 of the name's bytes,
/// linear probing over a power of two of slots, at least 16 and at least twice the keys. Keys
/// are placed in order, so of equal keys the probe meets the earlier first. The runtime
/// (`Fixtures/libSystem/objc/runtime.c`, `fixture_objc_hash` and `probe`) looks names up the same way.
struct ObjCHashTable {
    let capacity: Int
    /// Per key, its slot.
    let slots: [Int]

    static func capacity(for count: Int) -> Int {
        var capacity = 16
        while capacity < count * 2 { capacity *= 2 }
        return capacity
    }

    static func hash(_ name: [UInt8]) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name { h = (h ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        return h
    }

    /// Nil when the table would need more slots than the runtime reserves.
    init?(keys: [[UInt8]], reserved: UInt64) {
        capacity = Self.capacity(for: keys.count)
        guard UInt64(capacity) <= reserved else { return nil }
        let mask = UInt64(capacity - 1)
        var used = [Bool](repeating: false, count: capacity)
        var slots: [Int] = []
        slots.reserveCapacity(keys.count)
        for key in keys {
            var slot = Int(Self.hash(key) & mask)
            while used[slot] { slot = (slot + 1) & Int(mask) }
            used[slot] = true
            slots.append(slot)
        }
        self.slots = slots
    }
}
