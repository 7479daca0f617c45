import MachOReader

/// `--objc`: an image's Objective-C metadata row for row as `llvm-objdump-19 --macho
/// --objc-meta-data` prints it (only whitespace may differ): `__objc_classlist` (each
/// class with its `class_ro_t`, method, protocol, ivar and property lists, then its
/// metaclass), `__objc_classrefs`, `__objc_superrefs`, `__objc_catlist` (each category),
/// `__objc_protolist`, `__objc_msgrefs` and `__objc_imageinfo`.
///
/// It reads as llvm-objdump reads: every word as the file stores it (``FileSections``: no
/// rebase applied, no chained pointer decoded, so a chained image shows its on-disk
/// encodings and nothing behind them), an address through the first section holding it,
/// a value named by the symbol table symbol at that address, and list entries and
/// superclasses with no such symbol by the regular bind opcodes' symbol at their slot.
/// Object files' external relocations name fields as llvm's `get_symbol_64` does. Its
/// quirks are kept: at most 100 metaclasses per image, method lists stepped by 24 bytes
/// whatever their entsize, a category's `cls` printed without a name, an ivar's type
/// named through the name's value.
///
/// Walks are bounded by the file: a list entry or structure the file does not hold ends
/// its list with one line, and more entries in all than ``entryBudget`` allows (lists
/// that lead into each other over and over) end the table with an error.
struct ObjCMetadataTable {
    /// llvm-objdump's depth limit: metaclasses printed per image.
    static let metaclassLimit = 100

    let image: MachOImage, sections: FileSections
    /// Symbol table values to names, built on first use (llvm's `CreateSymbolAddressMap`).
    private var symbolNames: [UInt64: String]?
    /// Regular bind slots to symbol names, built on first use (llvm's bind table lookup).
    private var bindNames: [UInt64: String]?
    /// Relocation entries by the offset of their table, read on first use (object files).
    private var relocations: [UInt32: [RelocationInfo]] = [:]
    /// The symbol table behind relocations, read on first use.
    private var symbolTable: SymbolTable?
    private var symbolTableRead = false
    private var metaclassesPrinted = 0
    /// List entries and structures walked so far, against ``entryBudget``.
    private var entriesWalked = 0
    private let entryBudget: Int

    /// `entryBudget` defaults to 4 per byte of the image, at least 2^20.
    init(image: MachOImage, entryBudget: Int? = nil) {
        self.image = image
        sections = FileSections(image: image)
        self.entryBudget = entryBudget ?? max(1 << 20, 4 * image.view.count)
    }

    static func write<Output: TextOutputStream>(_ image: MachOImage, to out: inout Output) throws(MachOError) {
        var table = ObjCMetadataTable(image: image)
        try table.write(to: &out)
    }

    /// The section of a list llvm-objdump looks for, under its names in the order it tries them.
    func findSection(_ legacy: String, _ modern: String) -> Section? {
        let names = [("__OBJC2", legacy), ("__DATA", modern), ("__DATA_CONST", modern), ("__DATA_DIRTY", modern)]
        return names.lazy.compactMap { name in self.image.sections.first { $0.segmentName == name.0 && $0.name == name.1 } }.first
    }

    mutating func write<Output: TextOutputStream>(to out: inout Output) throws(MachOError) {
        let pointerLists: [(legacy: String, modern: String, title: String, referent: Referent?)] = [
            ("__class_list", "__objc_classlist", "class", .class), ("__class_refs", "__objc_classrefs", "class refs", nil),
            ("__super_refs", "__objc_superrefs", "super refs", nil), ("__category_list", "__objc_catlist", "category", .category),
            ("__protocol_list", "__objc_protolist", "protocol", nil),
        ]
        for list in pointerLists {
            guard let section = findSection(list.legacy, list.modern) else { continue }
            try walkPointerList(list.title, section, then: list.referent, to: &out)
        }
        if let section = findSection("__message_refs", "__objc_msgrefs") { try writeMessageReferences(section, to: &out) }
        if let section = findSection("__image_info", "__objc_imageinfo") { writeImageInfo(section, to: &out) }
    }

    // MARK: Names

    /// The symbol table's name for `value` (llvm's `GuessSymbolName`).
    mutating func symbolName(_ value: UInt64) throws(MachOError) -> String? {
        if symbolNames == nil { symbolNames = try Self.symbolAddressMap(image) }
        return symbolNames?[value]
    }

    /// Every symbol that is neither a stab nor undefined, by value, the last of a value
    /// winning; names starting with `.objc` left out.
    static func symbolAddressMap(_ image: MachOImage) throws(MachOError) -> [UInt64: String] {
        guard let table = try SymbolTable(image: image) else { return [:] }
        let sectionCount = image.sections.count
        var names: [UInt64: String] = [:]
        for index in 0..<table.count {
            let entry = try table.entry(index)
            guard !entry.isStab, !entry.isUndefined else { continue }
            if entry.type & NList64.typeMask == 0x0e, Int(entry.section) > sectionCount {
                throw .malformed("symbol \(index) names section \(entry.section) of \(sectionCount)", at: image.view.absolute(Int(image.symtab?.symbolOffset ?? 0)) + index * NList64.size)
            }
            let name = try table.name(of: entry)
            if !name.hasPrefix(".objc") { names[entry.value] = name }
        }
        return names
    }

    /// `name` when there is one, else the symbol the regular bind opcodes bind at `slot`.
    mutating func name(_ name: String?, orBoundAt slot: UInt64) throws(MachOError) -> String? {
        if let name { return name }
        if bindNames == nil {
            var names: [UInt64: String] = [:]
            try image.forEachBindFixup(in: .regular) { (fixup) throws(MachOError) in
                if let address = fixup.address, !fixup.symbolName.isEmpty { names[address] = fixup.symbolName }
            }
            bindNames = names
        }
        return bindNames?[slot]
    }

    /// What llvm's `get_symbol_64` finds for the pointer field at `offset` in `section`
    /// holding `value`: the symbol of the section's first relocation at that offset when
    /// it is external (its value as `nValue`), else the symbol table's name for `value`.
    struct Symbolic {
        var name: String?
        var nValue: UInt64 = 0
    }

    mutating func symbolic(_ section: Section, offset: UInt64, value: UInt64) throws(MachOError) -> Symbolic {
        if section.relocationCount != 0 {
            if relocations[section.relocationOffset] == nil { relocations[section.relocationOffset] = try image.relocations(of: section) }
            if let entry = relocations[section.relocationOffset]?.first(where: { UInt64($0.address) == offset & 0xffff_ffff }), entry.isExtern {
                if !symbolTableRead {
                    symbolTable = try SymbolTable(image: image)
                    symbolTableRead = true
                }
                guard let table = symbolTable, Int(entry.symbolNumber) < table.count else {
                    throw .malformed("relocation at offset \(hex(offset)) of (\(section.segmentName),\(section.name)) names symbol \(entry.symbolNumber), past the symbol table", at: image.view.absolute(Int(section.relocationOffset)))
                }
                let symbol = try table.entry(Int(entry.symbolNumber))
                let name = try table.name(of: symbol)
                return Symbolic(name: name.isEmpty ? try symbolName(value) : name, nValue: symbol.value)
            }
        }
        return Symbolic(name: try symbolName(value))
    }

    /// A pointer field as llvm prints most of them: with a relocated symbol, its name
    /// (or value) and `+ value` when the field is not 0; else the value.
    static func field(_ value: UInt64, _ symbolic: Symbolic) -> String {
        guard symbolic.nValue != 0 else { return hex(value) }
        return (symbolic.name ?? hex(symbolic.nValue)) + (value != 0 ? " + " + hex(value) : "")
    }

    /// An `imp` field's numbers as llvm prints them, each followed by a space: the relocated
    /// symbol's value and `+ value` when the field is not 0, else the value.
    static func impField(_ value: UInt64, _ symbolic: Symbolic) -> String {
        symbolic.nValue != 0 ? hex(symbolic.nValue) + " " + (value != 0 ? "+ " + hex(value) + " " : "") : hex(value) + " "
    }

    /// " STRING" for the string at `address` (llvm's `" %.*s"`), or nothing.
    func string(_ address: UInt64) -> String { Self.named(sections.string(at: address)) }

    /// A name after a blank (llvm's `" %s"`), or nothing.
    static func named(_ name: String?) -> String { name.map { " " + $0 } ?? "" }

    /// Each name after a blank.
    static func named(_ names: [String]) -> String { names.map { " " + $0 }.joined() }

    mutating func step(_ address: UInt64) throws(MachOError) {
        entriesWalked += 1
        guard entriesWalked <= entryBudget else {
            throw .malformed("Objective-C metadata: more than \(entryBudget) list entries and structures walked (lists lead into each other); stopped at \(hex(address))", at: image.view.absolute(0))
        }
    }

    /// `length` bytes at `address` for a structure, or nil (nothing printed) when no
    /// section holds the address. Past the section's end the bytes read as 0 (llvm copies
    /// what is left and zeroes the rest), noted in a line (llvm's wording) unless `quiet`;
    /// bytes the section should hold but the file does not end the walk with one line.
    mutating func structure<Output: TextOutputStream>(
        _ address: UInt64, _ length: Int, _ name: String, quiet: Bool = false, to out: inout Output
    ) throws(MachOError) -> Found? {
        try step(address)
        guard let found = sections.structure(at: address, length: length) else { return nil }
        let extendsPast = found.place.left < UInt64(length)
        if found.place.bytes.count < min(UInt64(length), found.place.left) {
            out.write("   (\(name) at \(hex(address)) extends past the end of the file)\n")
            return nil
        }
        if extendsPast && !quiet { out.write("   (\(name) entends past the end of the section)\n") }
        return Found(view: found.view, extendsPast: extendsPast, section: found.place.section, offset: found.place.offset)
    }

    /// A structure's bytes, whether it runs past its section, and where it lies.
    struct Found {
        let view: ByteView, extendsPast: Bool, section: Section, offset: UInt64
    }

    /// The 64-bit word at `offset` of a structure whose only fields are words (`property_t`,
    /// `message_ref_t`, `protocol_list_t`'s count).
    static func word(_ found: Found, _ offset: Int) -> UInt64 { (try? found.view.u64(offset)) ?? 0 }

    /// The first 8 bytes of `view` (fewer when it is shorter) as a little-endian number.
    static func littleEndian(_ view: ByteView) -> UInt64 {
        (0..<min(8, view.count)).reduce(0) { value, byte in value | UInt64((try? view.u8(byte)) ?? 0) << (8 * UInt64(byte)) }
    }

    /// ``symbolic(_:offset:value:)`` for the field at `fieldOffset` of a structure.
    mutating func symbolic(_ found: Found, _ fieldOffset: UInt64, _ value: UInt64) throws(MachOError) -> Symbolic {
        try symbolic(found.section, offset: found.offset &+ fieldOffset, value: value)
    }

    /// A ``field(_:_:)`` of a structure and where it leads (value plus relocated symbol value).
    mutating func field(_ found: Found, _ fieldOffset: UInt64, _ value: UInt64) throws(MachOError) -> (text: String, target: UInt64) {
        let symbolic = try symbolic(found, fieldOffset, value)
        return (Self.field(value, symbolic), value &+ symbolic.nValue)
    }

    /// A string pointer field's line: `label`, the ``field(_:_:_:)`` and the string it leads to.
    mutating func writeStringField<Output: TextOutputStream>(
        _ label: String, _ found: Found, _ fieldOffset: UInt64, _ value: UInt64, to out: inout Output
    ) throws(MachOError) {
        let field = try field(found, fieldOffset, value)
        out.write("\(label) \(field.text)\(string(field.target))\n")
    }

    /// What a pointer (a list entry or a structure's field) leads to, printed after its line.
    enum Referent {
        case `class`, category, methodList(indent: String), protocolList, ivarList, propertyList, layoutMap
    }

    /// Writes the `referent` at `address`.
    mutating func write<Output: TextOutputStream>(_ referent: Referent, at address: UInt64, to out: inout Output) throws(MachOError) {
        switch referent {
        case .class: try writeClass(address, to: &out)
        case .category: try writeCategory(address, to: &out)
        case .methodList(let indent): try writeMethodList(address, indent: indent, to: &out)
        case .protocolList: try writeProtocolList(address, to: &out)
        case .ivarList: try writeIvarList(address, to: &out)
        case .propertyList: try writePropertyList(address, to: &out)
        case .layoutMap: writeLayoutMap(address, to: &out)
        }
    }

    /// One pointer field's line (`label`, the ``field(_:_:_:)`` and `note`), then what its
    /// target holds, as `referent` says, unless it is null.
    mutating func writePointerField<Output: TextOutputStream>(
        _ label: String, _ found: Found, _ fieldOffset: UInt64, _ value: UInt64, note: String = "",
        then referent: Referent, to out: inout Output
    ) throws(MachOError) {
        let field = try field(found, fieldOffset, value)
        out.write("\(label) \(field.text)\(note)\n")
        if field.target != 0 { try write(referent, at: field.target, to: &out) }
    }

    // MARK: Lists of pointers

    /// llvm's `walk_pointer_list_64`: the section's title, then per 8-byte entry its
    /// address, value and name, then the `referent` the value leads to, if any.
    mutating func walkPointerList<Output: TextOutputStream>(
        _ listName: String, _ section: Section, then referent: Referent?, to out: inout Output
    ) throws(MachOError) {
        out.write("Contents of (\(section.segmentName),\(section.name)) section\n")
        let contents = sections.contents(of: section)
        for index in stride(from: 0, to: section.size, by: 8) {
            let size = min(section.size - index, 8)
            guard index + size <= UInt64(contents.count) else {
                out.write("\(listName) list at \(hex(section.address &+ index)) extends past the end of the file\n")
                return
            }
            let pointer = Self.littleEndian((try? contents.slice(Int(index), Int(size))) ?? ByteView([]))
            if index + 8 > section.size {
                out.write("\(listName) list pointer extends past end of (\(section.segmentName),\(section.name)) section\n")
            }
            let slot = section.address &+ index
            let symbolic = try symbolic(section, offset: index, value: pointer)
            // llvm prints the list slot's n_value (not its symbol's name: the name follows once).
            let value = Self.field(pointer, Symbolic(nValue: symbolic.nValue))
            out.write(Text.hex(slot, width: 16, uppercase: false) + " " + value + Self.named(try name(symbolic.name, orBoundAt: slot)) + "\n")
            try step(slot)
            if let referent { try write(referent, at: pointer &+ symbolic.nValue, to: &out) }
        }
    }

    // MARK: Classes

    /// llvm's `print_class64_t`, the metaclass followed iteratively.
    mutating func writeClass<Output: TextOutputStream>(_ address: UInt64, to out: inout Output) throws(MachOError) {
        var address = address
        while true {
            guard let found = try structure(address, ObjCClass.size, "class_t", quiet: true, to: &out), !found.extendsPast else { return }
            let cls = ObjCClass(parsing: found.view, at: address)
            let isa = try symbolic(found, 0, cls.isa)
            out.write("           isa \(hex(cls.isa))\(Self.named(isa.name))\n")
            let superclassName = try name(symbolic(found, 8, cls.superclass).name, orBoundAt: found.section.address &+ found.offset &+ 8)
            out.write("    superclass \(hex(cls.superclass))\(Self.named(superclassName))\n")
            out.write("         cache \(hex(cls.cache))\(try Self.named(symbolic(found, 16, cls.cache).name))\n")
            out.write("        vtable \(hex(cls.vtable))\(try Self.named(symbolic(found, 24, cls.vtable).name))\n")
            let data = try field(found, 32, cls.data)
            out.write("          data \(data.text) (struct class_ro_t *)\(data.target & 0x7 != 0 ? " Swift class" : "")\n")
            guard let isMeta = try writeClassRO(data.target & ~0x7, to: &out) else { return }
            let metaclass = cls.isa &+ isa.nValue
            guard !isMeta, metaclass != address, metaclass != 0, metaclassesPrinted < Self.metaclassLimit else { return }
            metaclassesPrinted += 1
            out.write("Meta Class\n")
            address = metaclass
        }
    }

    /// llvm's `print_class_ro64_t`: whether the class is a metaclass, nil when nothing was printed.
    mutating func writeClassRO<Output: TextOutputStream>(_ address: UInt64, to out: inout Output) throws(MachOError) -> Bool? {
        guard let found = try structure(address, ObjCClassRO.size, "class_ro_t", quiet: true, to: &out), !found.extendsPast else { return nil }
        let ro = ObjCClassRO(parsing: found.view)
        let names = [(ObjCClassRO.flagMeta, "RO_META"), (ObjCClassRO.flagRoot, "RO_ROOT"), (ObjCClassRO.flagHasCXXStructors, "RO_HAS_CXX_STRUCTORS")]
        out.write("                    flags \(hex(ro.flags))" + Self.named(namedBits(ro.flags, names).names) + "\n")
        out.write("            instanceStart \(ro.instanceStart)\n")
        out.write("             instanceSize \(ro.instanceSize)\n")
        out.write("                 reserved \(hex(ro.reserved))\n")
        out.write("               ivarLayout \(hex(ro.ivarLayoutAddress))\n")
        writeLayoutMap(ro.ivarLayoutAddress, to: &out)
        try writeStringField("                     name", found, 24, ro.nameAddress, to: &out)
        try writePointerField("              baseMethods", found, 32, ro.baseMethodsAddress, note: " (struct method_list_t *)", then: .methodList(indent: ""), to: &out)
        try writePointerField("            baseProtocols", found, 40, ro.baseProtocolsAddress, then: .protocolList, to: &out)
        try writePointerField("                    ivars", found, 48, ro.ivarsAddress, then: .ivarList, to: &out)
        try writePointerField("           weakIvarLayout", found, 56, ro.weakIvarLayoutAddress, then: .layoutMap, to: &out)
        try writePointerField("           baseProperties", found, 64, ro.basePropertiesAddress, then: .propertyList, to: &out)
        return ro.isMeta
    }

    /// llvm's `print_layout_map`: the bytes from `address` to the first NUL after the
    /// first byte, at most to the section's end.
    func writeLayoutMap<Output: TextOutputStream>(_ address: UInt64, to out: inout Output) {
        guard address != 0, let place = sections.place(address) else { return }
        var line = "                layout map: "
        var index = 0
        repeat {
            line += "0x" + Text.hex(UInt64((try? place.bytes.u8(index)) ?? 0), width: 2, uppercase: false) + " "
            index += 1
        } while index < place.bytes.count && UInt64(index) < place.left && ((try? place.bytes.u8(index)) ?? 0) != 0
        out.write(line + "\n")
    }

    // MARK: Method, protocol, ivar and property lists

    /// llvm's `print_method_list64_t` (pointer lists) and its relative-list form.
    mutating func writeMethodList<Output: TextOutputStream>(_ address: UInt64, indent: String, to out: inout Output) throws(MachOError) {
        guard let found = try structure(address, ObjCMethodList.Header.size, "method_list_t", to: &out) else { return }
        let header = ObjCMethodList.Header(parsing: found.view)
        let (entrySize, entryName) = header.isRelative
            ? (ObjCMethodList.RelativeEntry.size, "relative_method_t") : (ObjCMethodList.PointerEntry.size, "method_t")
        out.write("\(indent)\t\t   entsize \(header.isRelative ? "\(header.entrySize) (relative) " : "\(header.entsizeAndFlags)")\n")
        out.write("\(indent)\t\t     count \(header.count)\n")
        for index in 0..<UInt64(header.count) {
            let entry = address &+ 8 &+ index &* UInt64(entrySize)
            guard let found = try structure(entry, entrySize, entryName, quiet: true, to: &out) else { return }
            if found.extendsPast { out.write("\(indent)   (\(entryName) extends past the end of the section)\n") }
            if header.isRelative {
                try writeRelativeMethod(ObjCMethodList.RelativeEntry(parsing: found.view), at: entry, indent: indent, to: &out)
            } else {
                let method = ObjCMethodList.PointerEntry(parsing: found.view)
                try writeStringField("\(indent)\t\t      name", found, 0, method.name, to: &out)
                try writeStringField("\(indent)\t\t     types", found, 8, method.types, to: &out)
                let imp = try symbolic(found, 16, method.imp)
                out.write("\(indent)\t\t       imp \(imp.name ?? Self.impField(method.imp, imp))\n")
            }
        }
    }

    /// A relative method: each field's offset, the address it leads to, and what lies there
    /// (the selector reference's string, the types, the implementation's symbol).
    mutating func writeRelativeMethod<Output: TextOutputStream>(
        _ method: ObjCMethodList.RelativeEntry, at entry: UInt64, indent: String, to out: inout Output
    ) throws(MachOError) {
        let nameReference = entry &+ UInt64(bitPattern: Int64(method.name))
        var nameLine = "\(indent)\t\t      name \(Self.hex32(method.name)) (\(Self.hex32(nameReference)))"
        if let reference = sections.structure(at: nameReference, length: 8), reference.place.left >= 8 {
            nameLine += string((try? reference.view.u64(0)) ?? 0)
        }
        out.write(nameLine + "\n")
        let types = entry &+ 4 &+ UInt64(bitPattern: Int64(method.types))
        out.write("\(indent)\t\t     types \(Self.hex32(method.types)) (\(Self.hex32(types)))\(string(types))\n")
        let imp = entry &+ 8 &+ UInt64(bitPattern: Int64(method.imp))
        out.write("\(indent)\t\t       imp \(Self.hex32(method.imp)) (\(Self.hex32(imp)))\(try Self.named(symbolName(imp)))\n")
    }

    /// `0x%x` of a 32-bit field.
    static func hex32(_ value: Int32) -> String { hex(UInt32(bitPattern: value)) }
    static func hex32(_ value: UInt64) -> String { hex(UInt32(truncatingIfNeeded: value)) }

    /// llvm's `print_protocol_list64_t`.
    mutating func writeProtocolList<Output: TextOutputStream>(_ address: UInt64, to out: inout Output) throws(MachOError) {
        guard let found = try structure(address, 8, "protocol_list_t", to: &out) else { return }
        let count = Self.word(found, 0)
        out.write("                      count \(count)\n")
        for index in 0..<count {
            guard let found = try structure(address &+ 8 &+ 8 &* index, 8, "protocol_t *", to: &out) else { return }
            let pointer = try field(found, 0, Self.word(found, 0))
            out.write("\t\t      list[\(index)] \(pointer.text) (struct protocol_t *)\n")
            guard let proto = try structure(pointer.target, ObjCProtocol.size, "protocol_t", to: &out) else { return }
            let parsed = ObjCProtocol(parsing: proto.view, at: pointer.target)
            out.write("\t\t\t      isa \(hex(parsed.isa))\n")
            try writeStringField("\t\t\t     name", proto, 8, parsed.nameAddress, to: &out)
            out.write("\t\t\tprotocols \(hex(parsed.protocolsAddress))\n")
            let lists = parsed.methodListAddresses
            try writePointerField("\t\t  instanceMethods", proto, 24, lists[0], note: " (struct method_list_t *)", then: .methodList(indent: "\t"), to: &out)
            try writePointerField("\t\t     classMethods", proto, 32, lists[1], note: " (struct method_list_t *)", then: .methodList(indent: "\t"), to: &out)
            out.write("\t  optionalInstanceMethods \(hex(lists[2]))\n")
            out.write("\t     optionalClassMethods \(hex(lists[3]))\n")
            out.write("\t       instanceProperties \(hex(parsed.instancePropertiesAddress))\n")
        }
    }

    /// A list with an `entsize` and `count` header (ivars, properties): the header's two
    /// lines, then `body` with each entry's structure, until the count or a missing entry.
    mutating func writeEntries<Output: TextOutputStream>(
        _ address: UInt64, list: String, entry: String, entrySize: Int, to out: inout Output,
        _ body: (inout Self, Found, inout Output) throws(MachOError) -> Void
    ) throws(MachOError) {
        guard let found = try structure(address, ObjCMethodList.Header.size, list, to: &out) else { return }
        let header = ObjCMethodList.Header(parsing: found.view)
        out.write("                    entsize \(header.entsizeAndFlags)\n")
        out.write("                      count \(header.count)\n")
        for index in 0..<UInt64(header.count) {
            guard let found = try structure(address &+ 8 &+ index &* UInt64(entrySize), entrySize, entry, to: &out) else { return }
            try body(&self, found, &out)
        }
    }

    /// llvm's `print_ivar_list64_t` (whose type field takes its relocation symbol, when
    /// there is none, from the name's value).
    mutating func writeIvarList<Output: TextOutputStream>(_ address: UInt64, to out: inout Output) throws(MachOError) {
        try writeEntries(address, list: "ivar_list_t", entry: "ivar_t", entrySize: ObjCIvar.size, to: &out) { table, found, out throws(MachOError) in
            let ivar = ObjCIvar(parsing: found.view)
            let offset = try table.field(found, 0, ivar.offsetAddress)
            var offsetLine = "\t\t\t   offset \(offset.text)"
            if let place = table.sections.place(offset.target) {
                // llvm reads 8 bytes even when fewer are left in the section: those after
                // it come from the file.
                offsetLine += " \(Self.littleEndian(table.sections.contents(of: place.section, from: place.offset, pastEnd: 8)))"
            }
            out.write(offsetLine + "\n")
            try table.writeStringField("\t\t\t     name", found, 8, ivar.nameAddress, to: &out)
            let typeSymbol = try table.symbolic(found, 16, ivar.nameAddress)
            out.write("\t\t\t     type \(Self.field(ivar.typeAddress, typeSymbol))\(table.string(ivar.typeAddress &+ typeSymbol.nValue))\n")
            out.write("\t\t\talignment \(ivar.alignment)\n")
            out.write("\t\t\t     size \(ivar.size)\n")
        }
    }

    /// llvm's `print_objc_property_list64`.
    mutating func writePropertyList<Output: TextOutputStream>(_ address: UInt64, to out: inout Output) throws(MachOError) {
        try writeEntries(address, list: "objc_property_list", entry: "objc_property", entrySize: 16, to: &out) { table, found, out throws(MachOError) in
            try table.writeStringField("\t\t\t     name", found, 0, Self.word(found, 0), to: &out)
            try table.writeStringField("\t\t\tattributes", found, 8, Self.word(found, 8), to: &out)
        }
    }

    // MARK: Categories, message references, image info

    /// llvm's `print_category64_t`.
    mutating func writeCategory<Output: TextOutputStream>(_ address: UInt64, to out: inout Output) throws(MachOError) {
        guard let found = try structure(address, ObjCCategory.size, "category_t", to: &out) else { return }
        let category = ObjCCategory(parsing: found.view, at: address)
        try writeStringField("              name", found, 0, category.nameAddress, to: &out)
        try writePointerField("               cls", found, 8, category.classAddress, then: .class, to: &out)
        try writePointerField("   instanceMethods", found, 16, category.instanceMethodsAddress, then: .methodList(indent: ""), to: &out)
        try writePointerField("      classMethods", found, 24, category.classMethodsAddress, then: .methodList(indent: ""), to: &out)
        try writePointerField("         protocols", found, 32, category.protocolsAddress, then: .protocolList, to: &out)
        try writePointerField("instanceProperties", found, 40, category.instancePropertiesAddress, then: .propertyList, to: &out)
    }

    /// llvm's `print_message_refs64`.
    mutating func writeMessageReferences<Output: TextOutputStream>(_ section: Section, to out: inout Output) throws(MachOError) {
        out.write("Contents of (\(section.segmentName),\(section.name)) section\n")
        for index in stride(from: 0, to: section.size, by: 16) {
            guard let found = try structure(section.address &+ index, 16, "message_ref", to: &out) else { return }
            let imp = try symbolic(found, 0, Self.word(found, 0))
            out.write("  imp \(Self.impField(Self.word(found, 0), imp))\(Self.named(imp.name))\n")
            try writeStringField("  sel", found, 8, Self.word(found, 8), to: &out)
        }
    }

    /// llvm's `print_image_info64`.
    func writeImageInfo<Output: TextOutputStream>(_ section: Section, to out: inout Output) {
        out.write("Contents of (\(section.segmentName),\(section.name)) section\n")
        guard let found = sections.structure(at: section.address, length: ObjCImageInfo.size) else { return }
        if found.place.left < UInt64(ObjCImageInfo.size) { out.write("   (objc_image_info entends past the end of the section)\n") }
        let info = ObjCImageInfo(fieldsOf: found.view)
        out.write("  version \(info.version)\n")
        let names: [(UInt32, String)] = [(1 << 0, "OBJC_IMAGE_IS_REPLACEMENT"), (1 << 1, "OBJC_IMAGE_SUPPORTS_GC"),
                                         (1 << 5, "OBJC_IMAGE_IS_SIMULATED"), (1 << 6, "OBJC_IMAGE_HAS_CATEGORY_CLASS_PROPERTIES")]
        var flags = "    flags \(hex(info.flags))" + Self.named(namedBits(info.flags, names).names)
        let swiftVersion = (info.flags >> 8) & 0xff
        if swiftVersion != 0 {
            let versions: [UInt32: String] = [
                1: "Swift 1.0", 2: "Swift 1.1", 3: "Swift 2.0", 4: "Swift 3.0", 5: "Swift 4.0", 6: "Swift 4.1/Swift 4.2", 7: "Swift 5 or later",
            ]
            flags += " " + (versions[swiftVersion] ?? "unknown future Swift version (\(swiftVersion))")
        }
        out.write(flags + "\n")
    }
}
