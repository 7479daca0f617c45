/// One image's Objective-C metadata read from its file, as it would be at the image's
/// preferred load address: what `dyld3 inspect --objc`, `otool -ov` and `dyld_info -objc`
/// show. Segments that hold fixups are copied (their file bytes only, so the copy is
/// bounded by the file) with every rebase applied (chained pointers decoded to their
/// targets); bound pointers read as 0 there and are named by ``pointer(at:what:)``. Other
/// segments are read in place. Every structure is parsed by the same bounded parsers the
/// loader uses (``ObjCClass``, ``ObjCClassRO``, ``ObjCCategory``, ``ObjCMethodList``).
///
/// Errors are ``MachOError``s at the file offset of the list entry being read, naming the
/// list, the entry and the address that was wrong.
package struct ObjCFileImage: Sendable {
    package let image: MachOImage, sections: ObjCSections, space: ObjCAddressSpace
    /// Bound pointers by slot address: the symbol and addend.
    private let binds: [UInt64: (name: String, addend: Int64)]

    /// nil when the image has no `__objc_imageinfo`.
    package init?(image: MachOImage) throws(MachOError) {
        precondition(!image.isMapped, "Objective-C metadata is read through a file's fixups, not a mapped image's")
        guard let sections = try ObjCSections(image: image) else { return nil }
        self.image = image
        self.sections = sections
        let base = image.preferredLoadAddress
        var rebases: [Int: [(offset: Int, value: UInt64)]] = [:]
        var binds: [UInt64: (name: String, addend: Int64)] = [:]
        if let chained = try image.parseChainedFixups() {
            try chained.forEachFixup(in: image) { (fixup) throws(MachOError) in
                if let rebase = fixup.pointer.rebase {
                    let value = rebase.targetAddress(imageBase: base) | UInt64(rebase.high8) << 56
                    rebases[fixup.segmentIndex, default: []].append((Int(fixup.offsetInSegment), value))
                } else if let bind = fixup.pointer.bind, let target = fixup.boundImport {
                    rebases[fixup.segmentIndex, default: []].append((Int(fixup.offsetInSegment), 0))
                    binds[fixup.address] = (target.name, target.addend &+ bind.addend)
                }
            }
        } else if image.dyldInfo != nil {
            // Opcode rebases leave the unslid target in the file: nothing to apply.
            try image.forEachBindFixup(in: .regular) { (fixup) throws(MachOError) in
                if let address = fixup.address { binds[address] = (fixup.symbolName, fixup.addend) }
            }
        }
        var regions: [ObjCAddressSpace.Region] = []
        for (index, segment) in image.segments.enumerated() where segment.initialProtection.contains(.read) && segment.fileSize > 0 {
            guard segment.vmAddress >= base else { continue }
            let size = min(segment.fileSize, segment.vmSize)
            var view = try image.view.slice(offset: segment.fileOffset, size: size)
            if let patches = rebases[index] {
                var bytes = try view.bytes(0, view.count)
                for patch in patches where patch.offset >= 0 && patch.offset <= bytes.count - 8 {
                    for byte in 0..<8 { bytes[patch.offset + byte] = UInt8(truncatingIfNeeded: patch.value >> (8 * UInt64(byte))) }
                }
                view = ByteView(bytes)
            }
            regions.append(ObjCAddressSpace.Region(image: 0, start: segment.vmAddress, vmOffset: segment.vmAddress - base, view: view))
        }
        space = ObjCAddressSpace(regions: regions)
        self.binds = binds
    }

    /// What the pointer at `slot` holds.
    package func pointer(at slot: UInt64, what: String) throws(MachOError) -> ObjCPointer {
        let value = try space.u64(at: slot, what: what)
        if let bind = binds[slot] { return .symbol(bind.name, addend: bind.addend) }
        return value == 0 ? .null : .address(value)
    }

    /// The NUL-terminated string at `address` (at most ``ObjCAddressSpace/maxNameLength`` bytes).
    package func string(at address: UInt64, what: String) throws(MachOError) -> String {
        String(decoding: try space.cString(at: address, what: what), as: UTF8.self)
    }

    package var classCount: Int { sections.classList?.pointerCount ?? 0 }
    package var categoryCount: Int { sections.categoryList?.pointerCount ?? 0 }
    package var selectorReferenceCount: Int { sections.selectorReferences?.pointerCount ?? 0 }

    /// Entry `index` of `__objc_classlist` (< ``classCount``).
    package func classDescription(_ index: Int) throws(MachOError) -> ObjCClassDescription {
        let entry = listEntry(sections.classList, index)
        return try reading("__objc_classlist", index, entry) { () throws(MachOError) in
            let address = try localAddress(at: entry, what: "class pointer")
            let cls = try classObject(at: address)
            var metaclass: ObjCClassObjectDescription?
            if case let .address(isa) = cls.isa { metaclass = try classObject(at: isa) }
            return ObjCClassDescription(listEntry: entry, cls: cls, metaclass: metaclass, superclassName: try className(cls.superclass))
        }
    }

    /// Entry `index` of `__objc_catlist` (< ``categoryCount``).
    package func categoryDescription(_ index: Int) throws(MachOError) -> ObjCCategoryDescription {
        let entry = listEntry(sections.categoryList, index)
        return try reading("__objc_catlist", index, entry) { () throws(MachOError) in
            let address = try localAddress(at: entry, what: "category pointer")
            let category = try ObjCCategory(in: space, at: address)
            let cls = try pointer(at: address &+ 8, what: "category's class")
            return ObjCCategoryDescription(
                listEntry: entry, address: address, name: try string(at: category.nameAddress, what: "category name"),
                nameAddress: category.nameAddress, cls: cls, className: try className(cls),
                instanceMethods: try methodList(at: category.instanceMethodsAddress),
                classMethods: try methodList(at: category.classMethodsAddress))
        }
    }

    /// Entry `index` of `__objc_selrefs` (< ``selectorReferenceCount``).
    package func selectorReference(_ index: Int) throws(MachOError) -> ObjCSelectorReferenceDescription {
        let entry = listEntry(sections.selectorReferences, index)
        return try reading("__objc_selrefs", index, entry) { () throws(MachOError) in
            let target = try pointer(at: entry, what: "selector reference")
            guard case let .address(address) = target else { return ObjCSelectorReferenceDescription(slot: entry, target: target, name: nil) }
            return ObjCSelectorReferenceDescription(slot: entry, target: target, name: try string(at: address, what: "selector name"))
        }
    }

    private func listEntry(_ range: ObjCSections.Range?, _ index: Int) -> UInt64 {
        image.preferredLoadAddress &+ (range?.vmOffset ?? 0) &+ UInt64(index * 8)
    }

    /// Runs `body`, turning its Objective-C metadata error into a malformed entry at the entry's file offset.
    private func reading<T>(_ list: String, _ index: Int, _ entry: UInt64, _ body: () throws(MachOError) -> T) throws(MachOError) -> T {
        do {
            return try body()
        } catch {
            throw .malformed("\(list) entry \(index) (\(hex(entry))): \(error)", at: fileOffset(of: entry))
        }
    }

    /// The file offset of the bytes at `address` (0 when no segment's file bytes hold it).
    package func fileOffset(of address: UInt64) -> Int {
        for segment in image.segments where address >= segment.vmAddress && address - segment.vmAddress < segment.fileSize {
            return image.view.absolute(Int(segment.fileOffset + (address - segment.vmAddress)))
        }
        return image.view.absolute(0)
    }

    private func localAddress(at slot: UInt64, what: String) throws(MachOError) -> UInt64 {
        guard case let .address(address) = try pointer(at: slot, what: what) else {
            throw MachOError(image: 0, address: slot, what: "\(what) is not an address in the image")
        }
        return address
    }

    private func classObject(at address: UInt64) throws(MachOError) -> ObjCClassObjectDescription {
        let cls = try ObjCClass(in: space, at: address)
        let ro = try ObjCClassRO(in: space, at: cls.roAddress)
        return ObjCClassObjectDescription(
            address: address, isa: try pointer(at: address, what: "isa"), superclass: try pointer(at: address &+ 8, what: "superclass"),
            roAddress: cls.roAddress, flags: ro.flags, name: try string(at: ro.nameAddress, what: "class name"),
            nameAddress: ro.nameAddress, methods: try methodList(at: ro.baseMethodsAddress))
    }

    /// The name of the class `pointer` leads to: its `class_ro_t` name, or the bound
    /// symbol without its `_OBJC_CLASS_$_` prefix; nil for a null pointer.
    private func className(_ pointer: ObjCPointer) throws(MachOError) -> String? {
        switch pointer {
        case .null: return nil
        case let .address(address):
            let ro = try ObjCClassRO(in: space, at: try ObjCClass(in: space, at: address).roAddress)
            return try string(at: ro.nameAddress, what: "class name")
        case let .symbol(name, _):
            for prefix in ["_OBJC_CLASS_$_", "_OBJC_METACLASS_$_"] where name.hasPrefix(prefix) {
                return String(name.dropFirst(prefix.count))
            }
            return name
        }
    }

    private func methodList(at address: UInt64) throws(MachOError) -> ObjCMethodListDescription? {
        guard address != 0 else { return nil }
        let list = try ObjCMethodList(in: space, at: address)
        let methods = try (0..<list.count).map { (index) throws(MachOError) in
            let method = list.method(index)
            let nameAddress = try space.u64(at: method.nameSlot, what: method.nameSlotIsSelectorReference ? "method's selector reference" : "method name")
            return ObjCMethodDescription(
                name: try string(at: nameAddress, what: "method name"), nameAddress: nameAddress,
                types: try string(at: method.types, what: "method types"), typesAddress: method.types, imp: method.imp)
        }
        return ObjCMethodListDescription(address: address, isRelative: list.isRelative, entrySize: list.entrySize, methods: methods)
    }
}
