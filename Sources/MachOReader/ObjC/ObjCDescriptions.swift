/// What a pointer in an image's file holds once the image is loaded at its preferred
/// address: nothing, an address (a rebase, or a plain value), or a symbol of another image
/// (a bind, its value in the file being meaningless).
package enum ObjCPointer: Equatable, Sendable, CustomStringConvertible {
    case null, address(UInt64), symbol(String, addend: Int64)

    package var description: String {
        switch self {
        case .null: "0x0"
        case let .address(address): "\(hex(address))"
        case let .symbol(name, addend): addend == 0 ? name : "\(name)+\(addend)"
        }
    }
}

/// One method of a method list: its selector name and type encoding (with the addresses
/// of their strings) and its implementation's address.
package struct ObjCMethodDescription: Equatable, Sendable {
    package let name: String, nameAddress: UInt64, types: String, typesAddress: UInt64, imp: UInt64
}

/// A `method_list_t` and its methods, in list order.
package struct ObjCMethodListDescription: Equatable, Sendable {
    package let address: UInt64, isRelative: Bool, entrySize: Int, methods: [ObjCMethodDescription]
}

/// A `class_t` (class or metaclass) with the `class_ro_t` it points to.
package struct ObjCClassObjectDescription: Equatable, Sendable {
    package let address: UInt64, isa: ObjCPointer, superclass: ObjCPointer, roAddress: UInt64, flags: UInt32
    package let name: String, nameAddress: UInt64
    /// nil when `baseMethods` is 0.
    package let methods: ObjCMethodListDescription?

    package var isMeta: Bool { flags & ObjCClassRO.flagMeta != 0 }
}

/// One entry of `__objc_classlist`: the class, its metaclass (nil when `isa` is not an
/// address in the image) and its superclass's name (nil for a root class).
package struct ObjCClassDescription: Equatable, Sendable {
    /// The address of the `__objc_classlist` entry.
    package let listEntry: UInt64, cls: ObjCClassObjectDescription, metaclass: ObjCClassObjectDescription?
    /// The superclass's name: from its `class_ro_t` when it is in the image, from the
    /// bound symbol (`_OBJC_CLASS_$_Name`) otherwise.
    package let superclassName: String?
}

/// One entry of `__objc_catlist`.
package struct ObjCCategoryDescription: Equatable, Sendable {
    package let listEntry: UInt64, address: UInt64, name: String, nameAddress: UInt64, cls: ObjCPointer
    /// The extended class's name (nil when `cls` is null: a missing weak class).
    package let className: String?
    package let instanceMethods: ObjCMethodListDescription?, classMethods: ObjCMethodListDescription?
}

/// One entry of `__objc_selrefs`: its address, what it points to and the selector name.
package struct ObjCSelectorReferenceDescription: Equatable, Sendable {
    package let slot: UInt64, target: ObjCPointer
    /// nil when the reference is not an address (a bind or null).
    package let name: String?
}
