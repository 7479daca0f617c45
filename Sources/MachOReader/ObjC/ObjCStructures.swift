/// `class_t` (objc4, 64-bit): a class or metaclass object.
public struct ObjCClass: Equatable, Sendable {
    public static let size = 40
    /// objc4's FAST_DATA_MASK: the low bits and the top of `data` are flags.
    public static let dataMask: UInt64 = 0x0000_7fff_ffff_fff8

    public let address: UInt64
    /// The metaclass (for a metaclass: the root metaclass).
    public let isa: UInt64
    public let superclass: UInt64
    /// The `class_ro_t`.
    public let roAddress: UInt64

    public init(in space: ObjCAddressSpace, at address: UInt64) throws(ObjCError) {
        let view = try space.view(at: address, length: ObjCClass.size, what: "class_t")
        self.address = address
        isa = (try? view.u64(0)) ?? 0
        superclass = (try? view.u64(8)) ?? 0
        roAddress = ((try? view.u64(32)) ?? 0) & ObjCClass.dataMask
    }
}

extension ObjCClass {
    /// `address` and its superclasses, nearest first, until a null superclass or a class
    /// `stop` accepts (not included). Walked iteratively: more than `limit` classes, or a
    /// class met twice (a cycle, which the runtime would follow forever), is an error
    /// naming the class the walk started from.
    public static func superclassChain(
        in space: ObjCAddressSpace, from address: UInt64, limit: Int, stop: (UInt64) -> Bool = { _ in false }
    ) throws(ObjCError) -> [UInt64] {
        var chain: [UInt64] = []
        var seen: Set<UInt64> = []
        var current = address
        while current != 0, !stop(current) {
            guard seen.insert(current).inserted else {
                throw ObjCError(image: space.location(of: address)?.image, address: address,
                                what: "superclass chain of the class at 0x\(String(address, radix: 16)) loops back to 0x\(String(current, radix: 16))")
            }
            guard chain.count < limit else {
                throw ObjCError(image: space.location(of: address)?.image, address: address, what: "superclass chain longer than \(limit)")
            }
            chain.append(current)
            current = try ObjCClass(in: space, at: current).superclass
        }
        return chain
    }
}

/// `class_ro_t` (64-bit): flags, name and base method list.
public struct ObjCClassRO: Equatable, Sendable {
    public static let size = 72
    public static let flagMeta: UInt32 = 0x1
    public static let flagRoot: UInt32 = 0x2

    public let flags: UInt32
    public let nameAddress: UInt64
    /// 0 when the class has no methods of its own.
    public let baseMethodsAddress: UInt64

    public var isMeta: Bool { flags & ObjCClassRO.flagMeta != 0 }

    public init(in space: ObjCAddressSpace, at address: UInt64) throws(ObjCError) {
        let view = try space.view(at: address, length: ObjCClassRO.size, what: "class_ro_t")
        flags = (try? view.u32(0)) ?? 0
        nameAddress = (try? view.u64(24)) ?? 0
        baseMethodsAddress = (try? view.u64(32)) ?? 0
    }
}

/// `category_t` (64-bit): the class it extends and its method lists.
public struct ObjCCategory: Equatable, Sendable {
    /// name, cls, instanceMethods, classMethods (the rest is not read).
    public static let readSize = 32

    public let address: UInt64
    public let nameAddress: UInt64
    /// 0 when the class is missing (a weak-imported class that is absent).
    public let classAddress: UInt64
    public let instanceMethodsAddress: UInt64
    public let classMethodsAddress: UInt64

    public init(in space: ObjCAddressSpace, at address: UInt64) throws(ObjCError) {
        let view = try space.view(at: address, length: ObjCCategory.readSize, what: "category_t")
        self.address = address
        nameAddress = (try? view.u64(0)) ?? 0
        classAddress = (try? view.u64(8)) ?? 0
        instanceMethodsAddress = (try? view.u64(16)) ?? 0
        classMethodsAddress = (try? view.u64(24)) ?? 0
    }
}

/// `protocol_t` (64-bit): isa (0 in the file; the canonical protocol's is set to the
/// `Protocol` class at launch), name and its four method lists (the rest is not read).
public struct ObjCProtocol: Equatable, Sendable {
    /// isa, mangledName, protocols, instanceMethods, classMethods,
    /// optionalInstanceMethods, optionalClassMethods.
    public static let readSize = 56

    public let address: UInt64
    public let isa: UInt64
    public let nameAddress: UInt64
    /// instanceMethods, classMethods, optionalInstanceMethods, optionalClassMethods (0: none).
    public let methodListAddresses: [UInt64]

    public init(in space: ObjCAddressSpace, at address: UInt64) throws(ObjCError) {
        let view = try space.view(at: address, length: ObjCProtocol.readSize, what: "protocol_t")
        self.address = address
        isa = (try? view.u64(0)) ?? 0
        nameAddress = (try? view.u64(8)) ?? 0
        methodListAddresses = [24, 32, 40, 48].map { (try? view.u64($0)) ?? 0 }
    }
}

/// `method_list_t`: pointer entries (name, types, imp: 24 bytes) or, with the top flag
/// bit, relative ones (three signed 32-bit offsets, 12 bytes, each from its own field; the
/// name's offset leads to a selector reference, not to the string).
public struct ObjCMethodList: Sendable {
    public static let relativeFlag: UInt32 = 0x8000_0000
    public static let entsizeMask: UInt32 = 0x0000_fffc
    /// A method list longer than this is corrupt metadata.
    public static let maxCount: UInt32 = 1 << 20

    /// One method: where its name comes from and its implementation.
    public struct Method: Equatable, Sendable {
        /// Pointer lists: the address of the entry's name field (a `SEL` the loader may rewrite).
        /// Relative lists: the address of the selector reference the name offset leads to.
        public let nameSlot: UInt64
        /// Whether `nameSlot` is the list's own field (a pointer list) or a selector reference.
        public let nameSlotIsSelectorReference: Bool
        /// The address of the type encoding string.
        public let types: UInt64
        public let imp: UInt64
    }

    public let address: UInt64
    public let isRelative: Bool
    public let entrySize: Int
    public let count: Int
    private let entries: ByteView

    public init(in space: ObjCAddressSpace, at address: UInt64) throws(ObjCError) {
        let header = try space.view(at: address, length: 8, what: "method_list_t header")
        let flags = (try? header.u32(0)) ?? 0
        let count = (try? header.u32(4)) ?? 0
        isRelative = flags & ObjCMethodList.relativeFlag != 0
        entrySize = Int(flags & ObjCMethodList.entsizeMask)
        let wanted = isRelative ? 12 : 24
        guard entrySize >= wanted else {
            throw ObjCError(image: space.location(of: address)?.image, address: address, what: "method list entry size \(entrySize) (needs \(wanted))")
        }
        guard count <= ObjCMethodList.maxCount else {
            throw ObjCError(image: space.location(of: address)?.image, address: address, what: "method list count \(count)")
        }
        self.address = address
        self.count = Int(count)
        entries = try space.view(at: address &+ 8, length: Int(count) * entrySize, what: "method list of \(count) entries")
    }

    /// Method `index` (< `count`).
    public func method(_ index: Int) -> Method {
        let offset = index * entrySize
        let entryAddress = address &+ 8 &+ UInt64(offset)
        if isRelative {
            let name = Int64(Int32(bitPattern: (try? entries.u32(offset)) ?? 0))
            let types = Int64(Int32(bitPattern: (try? entries.u32(offset + 4)) ?? 0))
            let imp = Int64(Int32(bitPattern: (try? entries.u32(offset + 8)) ?? 0))
            return Method(nameSlot: entryAddress &+ UInt64(bitPattern: name), nameSlotIsSelectorReference: true,
                          types: entryAddress &+ 4 &+ UInt64(bitPattern: types),
                          imp: entryAddress &+ 8 &+ UInt64(bitPattern: imp))
        }
        return Method(nameSlot: entryAddress, nameSlotIsSelectorReference: false,
                      types: (try? entries.u64(offset + 8)) ?? 0, imp: (try? entries.u64(offset + 16)) ?? 0)
    }
}

/// `objc_image_info`: version (always 0) and flags.
public struct ObjCImageInfo: Equatable, Sendable {
    public static let size = 8
    public let version: UInt32
    public let flags: UInt32

    public init(parsing view: ByteView) throws(MachOError) {
        version = try view.u32(0)
        flags = try view.u32(4)
        guard version == 0 else { throw .malformed("objc_image_info version \(version) (expected 0)", at: view.absolute(0)) }
    }
}
