import MachOReader

/// `--objc-summary`: an image's Objective-C metadata as ``ObjCFileImage`` reads it, in the spirit of
/// `otool -ov` and `dyld_info -objc`: each class of `__objc_classlist` (name, superclass,
/// metaclass, instance and class methods with types and implementations), each category of
/// `__objc_catlist` (name, class, methods) and each selector reference of `__objc_selrefs`.
/// Addresses are unslid (the image at its preferred address). Written one entry at a time.
enum ObjCTable {
    static func write<Output: TextOutputStream>(_ image: MachOImage, to out: inout Output) throws(MachOError) {
        guard let objc = try ObjCFileImage(image: image) else {
            out.write("Objective-C: none (no __objc_imageinfo)\n")
            return
        }
        out.write("Objective-C: image info version \(objc.sections.imageInfo.version) flags \(hex(objc.sections.imageInfo.flags))\n")
        out.write("  classes: \(objc.classCount)\n")
        for index in 0..<objc.classCount {
            let cls = try objc.classDescription(index)
            var line = "    \(hex(cls.cls.address)) \(cls.cls.name)"
            line += cls.superclassName.map { " superclass \($0)" } ?? " (root)"
            if let metaclass = cls.metaclass { line += " metaclass \(hex(metaclass.address))" }
            out.write(line + "\n")
            writeMethods(cls.metaclass?.methods, prefix: "+", to: &out)
            writeMethods(cls.cls.methods, prefix: "-", to: &out)
        }
        out.write("  categories: \(objc.categoryCount)\n")
        for index in 0..<objc.categoryCount {
            let category = try objc.categoryDescription(index)
            out.write("    \(hex(category.address)) \(category.name) on \(category.className ?? "(missing class)")\n")
            writeMethods(category.classMethods, prefix: "+", to: &out)
            writeMethods(category.instanceMethods, prefix: "-", to: &out)
        }
        out.write("  selector references: \(objc.selectorReferenceCount)\n")
        for index in 0..<objc.selectorReferenceCount {
            let reference = try objc.selectorReference(index)
            out.write("    \(hex(reference.slot)) \(reference.target) \(reference.name ?? "")\n")
        }
    }

    private static func writeMethods<Output: TextOutputStream>(_ list: ObjCMethodListDescription?, prefix: String, to out: inout Output) {
        guard let list else { return }
        for method in list.methods { out.write("      \(prefix)\(method.name) \(method.types) imp \(hex(method.imp))\n") }
    }

    // MARK: JSON

    /// The `objc` member of a slice: null without `__objc_imageinfo`.
    static func writeJSON<Output: TextOutputStream>(_ image: MachOImage, json: inout JSONStream, to out: inout Output) throws(MachOError) {
        guard let objc = try ObjCFileImage(image: image) else {
            json.member("objc", .null, to: &out)
            return
        }
        json.beginObject("objc", to: &out)
        json.member("image_info", .object([
            ("version", .uint(UInt64(objc.sections.imageInfo.version))), ("flags", .uint(UInt64(objc.sections.imageInfo.flags))),
        ]), to: &out)
        try json.array("classes", count: objc.classCount, to: &out) { (index) throws(MachOError) in
            let cls = try objc.classDescription(index)
            return .object([
                ("list_entry", .uint(cls.listEntry)), ("class", object(cls.cls)),
                ("metaclass", cls.metaclass.map(object) ?? .null),
                ("superclass_name", cls.superclassName.map(JSONValue.string) ?? .null),
            ])
        }
        try json.array("categories", count: objc.categoryCount, to: &out) { (index) throws(MachOError) in
            let category = try objc.categoryDescription(index)
            return .object([
                ("list_entry", .uint(category.listEntry)), ("address", .uint(category.address)), ("name", .string(category.name)),
                ("name_address", .uint(category.nameAddress)), ("class", pointer(category.cls)),
                ("class_name", category.className.map(JSONValue.string) ?? .null),
                ("instance_methods", methods(category.instanceMethods)), ("class_methods", methods(category.classMethods)),
            ])
        }
        try json.array("selector_references", count: objc.selectorReferenceCount, to: &out) { (index) throws(MachOError) in
            let reference = try objc.selectorReference(index)
            return .object([
                ("address", .uint(reference.slot)), ("target", pointer(reference.target)),
                ("name", reference.name.map(JSONValue.string) ?? .null),
            ])
        }
        json.end(to: &out)
    }

    /// A pointer: `{"address": N}`, `{"symbol": S, "addend": N}` or null.
    static func pointer(_ pointer: ObjCPointer) -> JSONValue {
        switch pointer {
        case .null: .null
        case let .address(address): .object([("address", .uint(address))])
        case let .symbol(name, addend): .object([("symbol", .string(name)), ("addend", .int(addend))])
        }
    }

    static func object(_ cls: ObjCClassObjectDescription) -> JSONValue {
        .object([
            ("address", .uint(cls.address)), ("isa", pointer(cls.isa)), ("superclass", pointer(cls.superclass)),
            ("data", .uint(cls.roAddress)), ("flags", .uint(UInt64(cls.flags))), ("name", .string(cls.name)),
            ("name_address", .uint(cls.nameAddress)), ("methods", methods(cls.methods)),
        ])
    }

    static func methods(_ list: ObjCMethodListDescription?) -> JSONValue {
        guard let list else { return .null }
        return .object([
            ("address", .uint(list.address)), ("relative", .bool(list.isRelative)),
            ("entry_size_bytes", .int(Int64(list.entrySize))),
            ("methods", .array(list.methods.map { method in
                .object([
                    ("name", .string(method.name)), ("name_address", .uint(method.nameAddress)),
                    ("types", .string(method.types)), ("types_address", .uint(method.typesAddress)), ("imp", .uint(method.imp)),
                ])
            })),
        ])
    }
}
