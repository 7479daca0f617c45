/// What a pointer in an image's file holds once the image is loaded at its preferred
/// address: nothing, an address (a rebase, or a plain value), or a symbol of another image
/// (a bind, its value in the file being meaningless).
public enum ObjCPointer: Equatable, Sendable, CustomStringConvertible {
    case null
    case address(UInt64)
    case symbol(String, addend: Int64)

    public var description: String {
        switch self {
        case .null: "0x0"
        case let .address(address): "0x\(String(address, radix: 16))"
        case let .symbol(name, addend): addend == 0 ? name : "\(name)+\(addend)"
        }
    }
}

/// One method of a method list: its selector name and type encoding (with the addresses
/// of their strings) and its implementation's address.
public struct ObjCMethodDescription: Equatable, Sendable {
    public let name: String
    public let nameAddress: UInt64
    public let types: String
    public let typesAddress: UInt64
    public let imp: UInt64
}

/// A `method_list_t` and its methods, in list order.
public struct ObjCMethodListDescription: Equatable, Sendable {
    public let address: UInt64
    public let isRelative: Bool
    public let entrySize: Int
    public let methods: [ObjCMethodDescription]
}

/// A `class_t` (class or metaclass) with the `class_ro_t` it points to.
public struct ObjCClassObjectDescription: Equatable, Sendable {
    public let address: UInt64
    public let isa: ObjCPointer
    public let superclass: ObjCPointer
    public let roAddress: UInt64
    public let flags: UInt32
    public let name: String
    public let nameAddress: UInt64
    /// nil when `baseMethods` is 0.
    public let methods: ObjCMethodListDescription?

    public var isMeta: Bool { flags & ObjCClassRO.flagMeta != 0 }
}

/// One entry of `__objc_classlist`: the class, its metaclass (nil when `isa` is not an
/// address in the image) and its superclass's name (nil for a root class).
public struct ObjCClassDescription: Equatable, Sendable {
    /// The address of the `__objc_classlist` entry.
    public let listEntry: UInt64
    public let cls: ObjCClassObjectDescription
    public let metaclass: ObjCClassObjectDescription?
    /// The superclass's name: from its `class_ro_t` when it is in the image, from the
    /// bound symbol (`_OBJC_CLASS_$_Name`) otherwise.
    public let superclassName: String?
}

/// One entry of `__objc_catlist`.
public struct ObjCCategoryDescription: Equatable, Sendable {
    public let listEntry: UInt64
    public let address: UInt64
    public let name: String
    public let nameAddress: UInt64
    public let cls: ObjCPointer
    /// The extended class's name (nil when `cls` is null: a missing weak class).
    public let className: String?
    public let instanceMethods: ObjCMethodListDescription?
    public let classMethods: ObjCMethodListDescription?
}

/// One entry of `__objc_selrefs`: its address, what it points to and the selector name.
public struct ObjCSelectorReferenceDescription: Equatable, Sendable {
    public let slot: UInt64
    public let target: ObjCPointer
    /// nil when the reference is not an address (a bind or null).
    public let name: String?
}
