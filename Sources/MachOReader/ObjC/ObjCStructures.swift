// Objective-C runtime structures (objc4, 64-bit). Each `init(parsing:)` reads the first
// `size` bytes of its view (`readSize` or `size` where a type has both), which the caller
// has checked it holds; `init(in:at:)` reads them at an address of an ``ObjCAddressSpace``.

/// `class_t` (objc4, 64-bit): a class or metaclass object.
package struct ObjCClass: Equatable, Sendable {
    package static let size = 40
    /// objc4's FAST_DATA_MASK: the low bits and the top of `data` are flags.
    package static let dataMask: UInt64 = 0x0000_7fff_ffff_fff8

    package let address: UInt64
    /// The metaclass (for a metaclass: the root metaclass).
    package let isa: UInt64, superclass: UInt64
    /// The method cache and vtable words (0, or `_objc_empty_cache`, in a file).
    package let cache: UInt64, vtable: UInt64
    /// The `data` word as stored: the `class_ro_t` address with flag bits (Swift classes
    /// set the low bits).
    package let data: UInt64
    /// The `class_ro_t`: `data` under ``dataMask``.
    package var roAddress: UInt64 { data & ObjCClass.dataMask }

    package init(in space: ObjCAddressSpace, at address: UInt64) throws(MachOError) {
        self.init(parsing: try space.view(at: address, length: ObjCClass.size, what: "class_t"), at: address)
    }

    package init(parsing view: ByteView, at address: UInt64) {
        self.address = address
        (isa, superclass, cache, vtable, data) = (view.field64(0), view.field64(8), view.field64(16), view.field64(24), view.field64(32))
    }
}

extension ObjCClass {
    /// `address` and its superclasses, nearest first, until a null superclass or a class
    /// `stop` accepts (not included). Walked iteratively: more than `limit` classes, or a
    /// class met twice (a cycle, which the runtime would follow forever), is an error
    /// naming the class the walk started from.
    package static func superclassChain(
        in space: ObjCAddressSpace, from address: UInt64, limit: Int, stop: (UInt64) -> Bool = { _ in false }
    ) throws(MachOError) -> [UInt64] {
        var chain: [UInt64] = []
        var seen: Set<UInt64> = []
        var current = address
        while current != 0, !stop(current) {
            guard seen.insert(current).inserted else {
                throw space.error(at: address, "superclass chain of the class at \(hex(address)) loops back to \(hex(current))")
            }
            guard chain.count < limit else {
                throw space.error(at: address, "superclass chain longer than \(limit)")
            }
            chain.append(current)
            current = try ObjCClass(in: space, at: current).superclass
        }
        return chain
    }
}

/// `class_ro_t` (64-bit): flags, sizes, name, method, protocol, ivar and property lists
/// and the ivar layouts.
package struct ObjCClassRO: Equatable, Sendable {
    package static let size = 72
    package static let flagMeta: UInt32 = 0x1
    package static let flagRoot: UInt32 = 0x2
    /// `RO_HAS_CXX_STRUCTORS`.
    package static let flagHasCXXStructors: UInt32 = 0x4

    package let flags: UInt32, instanceStart: UInt32, instanceSize: UInt32, reserved: UInt32
    package let ivarLayoutAddress: UInt64, nameAddress: UInt64
    /// 0 when the class has no methods of its own.
    package let baseMethodsAddress: UInt64, baseProtocolsAddress: UInt64, ivarsAddress: UInt64
    package let weakIvarLayoutAddress: UInt64, basePropertiesAddress: UInt64

    package var isMeta: Bool { flags & ObjCClassRO.flagMeta != 0 }

    package init(in space: ObjCAddressSpace, at address: UInt64) throws(MachOError) {
        self.init(parsing: try space.view(at: address, length: ObjCClassRO.size, what: "class_ro_t"))
    }

    package init(parsing view: ByteView) {
        (flags, instanceStart, instanceSize, reserved, ivarLayoutAddress, nameAddress,
         baseMethodsAddress, baseProtocolsAddress, ivarsAddress, weakIvarLayoutAddress, basePropertiesAddress)
            = (view.field32(0), view.field32(4), view.field32(8), view.field32(12), view.field64(16), view.field64(24),
               view.field64(32), view.field64(40), view.field64(48), view.field64(56), view.field64(64))
    }
}

/// `category_t` (64-bit): the class it extends, its method lists, protocols and properties.
package struct ObjCCategory: Equatable, Sendable {
    /// name, cls, instanceMethods, classMethods: what the loader reads.
    package static let readSize = 32
    /// With protocols and instanceProperties.
    package static let size = 48

    package let address: UInt64, nameAddress: UInt64
    /// 0 when the class is missing (a weak-imported class that is absent).
    package let classAddress: UInt64, instanceMethodsAddress: UInt64, classMethodsAddress: UInt64
    /// 0 when read through ``readSize`` bytes only.
    package let protocolsAddress: UInt64, instancePropertiesAddress: UInt64

    package init(in space: ObjCAddressSpace, at address: UInt64) throws(MachOError) {
        self.init(parsing: try space.view(at: address, length: ObjCCategory.readSize, what: "category_t"), at: address)
    }

    package init(parsing view: ByteView, at address: UInt64) {
        self.address = address
        (nameAddress, classAddress, instanceMethodsAddress, classMethodsAddress, protocolsAddress, instancePropertiesAddress)
            = (view.field64(0), view.field64(8), view.field64(16), view.field64(24), view.field64(32), view.field64(40))
    }
}

/// `protocol_t` (64-bit): isa (0 in the file; the canonical protocol's is set to the
/// `Protocol` class at launch), name, its protocols, its four method lists and its
/// instance properties (the rest is not read).
package struct ObjCProtocol: Equatable, Sendable {
    /// isa, mangledName, protocols, instanceMethods, classMethods,
    /// optionalInstanceMethods, optionalClassMethods: what the loader reads.
    package static let readSize = 56
    /// With instanceProperties.
    package static let size = 64

    package let address: UInt64, isa: UInt64, nameAddress: UInt64, protocolsAddress: UInt64
    /// instanceMethods, classMethods, optionalInstanceMethods, optionalClassMethods (0: none).
    package let methodListAddresses: [UInt64]
    /// 0 when read through ``readSize`` bytes only.
    package let instancePropertiesAddress: UInt64

    package init(in space: ObjCAddressSpace, at address: UInt64) throws(MachOError) {
        self.init(parsing: try space.view(at: address, length: ObjCProtocol.readSize, what: "protocol_t"), at: address)
    }

    package init(parsing view: ByteView, at address: UInt64) {
        self.address = address
        (isa, nameAddress, protocolsAddress) = (view.field64(0), view.field64(8), view.field64(16))
        methodListAddresses = [24, 32, 40, 48].map { view.field64($0) }
        instancePropertiesAddress = view.field64(56)
    }
}

/// `method_list_t`: pointer entries (name, types, imp: 24 bytes) or, with the top flag
/// bit, relative ones (three signed 32-bit offsets, 12 bytes, each from its own field; the
/// name's offset leads to a selector reference, not to the string).
package struct ObjCMethodList: Sendable {
    package static let relativeFlag: UInt32 = 0x8000_0000
    package static let entsizeMask: UInt32 = 0x0000_fffc
    /// A method list longer than this is corrupt metadata.
    package static let maxCount: UInt32 = 1 << 20

    /// The 8-byte header every `entsize_list_tt` starts with (method, ivar and property
    /// lists): the entry size with flag bits, and the entry count.
    package struct Header: Equatable, Sendable {
        package static let size = 8
        package let entsizeAndFlags: UInt32, count: UInt32

        package init(parsing view: ByteView) { (entsizeAndFlags, count) = (view.field32(0), view.field32(4)) }

        package var isRelative: Bool { entsizeAndFlags & ObjCMethodList.relativeFlag != 0 }
        package var entrySize: Int { Int(entsizeAndFlags & ObjCMethodList.entsizeMask) }
    }

    /// `method_t` of a pointer list: the selector (a name string in the file), the type
    /// encoding string and the implementation.
    package struct PointerEntry: Equatable, Sendable {
        package static let size = 24
        package let name: UInt64, types: UInt64, imp: UInt64

        package init(parsing view: ByteView) { (name, types, imp) = (view.field64(0), view.field64(8), view.field64(16)) }
    }

    /// A relative `method_t`: each field a signed offset from its own address.
    package struct RelativeEntry: Equatable, Sendable {
        package static let size = 12
        package let name: Int32, types: Int32, imp: Int32

        package init(parsing view: ByteView) {
            (name, types, imp) = (Int32(bitPattern: view.field32(0)), Int32(bitPattern: view.field32(4)), Int32(bitPattern: view.field32(8)))
        }
    }

    /// One method: where its name comes from and its implementation.
    package struct Method: Equatable, Sendable {
        /// Pointer lists: the address of the entry's name field (a `SEL` the loader may rewrite).
        /// Relative lists: the address of the selector reference the name offset leads to.
        package let nameSlot: UInt64
        /// Whether `nameSlot` is the list's own field (a pointer list) or a selector reference.
        package let nameSlotIsSelectorReference: Bool
        /// The address of the type encoding string.
        package let types: UInt64, imp: UInt64
    }

    package let address: UInt64, isRelative: Bool, entrySize: Int, count: Int
    private let entries: ByteView

    package init(in space: ObjCAddressSpace, at address: UInt64) throws(MachOError) {
        let header = Header(parsing: try space.view(at: address, length: Header.size, what: "method_list_t header"))
        isRelative = header.isRelative
        entrySize = header.entrySize
        let wanted = isRelative ? RelativeEntry.size : PointerEntry.size
        guard entrySize >= wanted else {
            throw space.error(at: address, "method list entry size \(entrySize) (needs \(wanted))")
        }
        guard header.count <= ObjCMethodList.maxCount else {
            throw space.error(at: address, "method list count \(header.count)")
        }
        self.address = address
        self.count = Int(header.count)
        entries = try space.view(at: address &+ 8, length: count * entrySize, what: "method list of \(count) entries")
    }

    /// Method `index` (< `count`).
    package func method(_ index: Int) -> Method {
        let offset = index * entrySize
        let entryAddress = address &+ 8 &+ UInt64(offset)
        if isRelative {
            let entry = RelativeEntry(parsing: (try? entries.slice(offset, RelativeEntry.size)) ?? ByteView([]))
            return Method(nameSlot: entryAddress &+ UInt64(bitPattern: Int64(entry.name)), nameSlotIsSelectorReference: true,
                          types: entryAddress &+ 4 &+ UInt64(bitPattern: Int64(entry.types)),
                          imp: entryAddress &+ 8 &+ UInt64(bitPattern: Int64(entry.imp)))
        }
        let entry = PointerEntry(parsing: (try? entries.slice(offset, PointerEntry.size)) ?? ByteView([]))
        return Method(nameSlot: entryAddress, nameSlotIsSelectorReference: false, types: entry.types, imp: entry.imp)
    }
}

/// `ivar_t` (64-bit): where the ivar's offset variable is, its name and type strings,
/// its alignment (log2) and size.
package struct ObjCIvar: Equatable, Sendable {
    package static let size = 32
    package let offsetAddress: UInt64, nameAddress: UInt64, typeAddress: UInt64
    package let alignment: UInt32, size: UInt32

    package init(parsing view: ByteView) {
        (offsetAddress, nameAddress, typeAddress, alignment, size)
            = (view.field64(0), view.field64(8), view.field64(16), view.field32(24), view.field32(28))
    }
}

/// `objc_image_info`: version (always 0) and flags.
package struct ObjCImageInfo: Equatable, Sendable {
    package static let size = 8
    package let version: UInt32, flags: UInt32

    package init(parsing view: ByteView) throws(MachOError) {
        try view.check(0, ObjCImageInfo.size)
        self.init(fieldsOf: view)
        guard version == 0 else { throw .malformed("objc_image_info version \(version) (expected 0)", at: view.absolute(0)) }
    }

    /// The two words as stored, whatever the version (what a dump prints).
    package init(fieldsOf view: ByteView) { (version, flags) = (view.field32(0), view.field32(4)) }
}

extension ByteView {
    /// The 64-bit field at `offset` of a structure the view holds (0 past its end).
    fileprivate func field64(_ offset: Int) -> UInt64 { (try? u64(offset)) ?? 0 }
    /// The 32-bit field at `offset` of a structure the view holds (0 past its end).
    fileprivate func field32(_ offset: Int) -> UInt32 { (try? u32(offset)) ?? 0 }
}
