import MachOReader

/// `--load-commands`: every load command of an image, in order, with the fields
/// `llvm-objdump --macho --private-headers` (and `otool -l`) print for it. The text uses
/// llvm-objdump's labels, right-aligned in each block; the JSON uses `<mach-o/loader.h>`'s
/// field names. A command the reader has no fields for shows its number and size.
enum LoadCommandsTable {
    /// One field: the label the text prints (nil: the field is the JSON's alone), the JSON
    /// key, and the value in each form.
    struct Field {
        let label: String?, key: String, text: String, value: JSONValue

        init(_ label: String?, key: String? = nil, _ text: String, _ value: JSONValue) {
            (self.label, self.key, self.text, self.value) = (label, key ?? label ?? "", text, value)
        }

        /// A decimal field.
        static func number<Value: BinaryInteger>(_ label: String, key: String? = nil, _ value: Value) -> Field {
            Field(label, key: key, String(value), .uint(UInt64(value)))
        }

        /// An address or size printed as llvm-objdump prints 64-bit ones: 16 hex digits.
        static func address(_ label: String, key: String? = nil, _ value: UInt64) -> Field {
            Field(label, key: key, "0x" + Text.hex(value, width: 16, uppercase: false), .uint(value))
        }

        static func string(_ label: String, key: String? = nil, _ value: String) -> Field {
            Field(label, key: key, value, .string(value))
        }

        /// A packed `xxxx.yy.zz` version.
        static func version(_ label: String, key: String? = nil, _ value: UInt32) -> Field {
            Field(label, key: key, value.versionString, .string(value.versionString))
        }

        /// Flag bits by name: the names in the text, the raw value in the JSON.
        static func flags(_ label: String, _ value: UInt32, _ names: [String]) -> Field {
            Field(label, names.isEmpty ? "(none)" : names.joined(separator: " "), .uint(UInt64(value)))
        }
    }

    /// A list inside a command: a segment's sections, a build version's tools, a linker
    /// option's strings. Items with a title get their own `Section`-style heading in the text.
    struct List {
        let key: String, title: String?, items: [[Field]]
    }

    /// One command's fields after `cmd` and `cmdsize`, and its lists.
    struct Body {
        var fields: [Field] = []
        var lists: [List] = []
    }

    /// Writes each command's fields right-aligned on the longest label among them and the
    /// items of its untitled lists, then its lists; a titled item is a block of its own,
    /// aligned on its own labels.
    static func write<Output: TextOutputStream>(_ image: MachOImage, to out: inout Output) throws(MachOError) {
        func labelWidth(_ fields: [Field]) -> Int { fields.compactMap { $0.label?.utf8.count }.max() ?? 0 }
        func line(_ field: Field, _ width: Int) {
            guard let label = field.label else { return }
            out.write(String(repeating: " ", count: max(0, width - label.utf8.count)) + label + " " + field.text + "\n")
        }
        for (index, command) in image.loadCommands.enumerated() {
            let body = try Self.body(command, image)
            out.write("Load command \(index)\n")
            let fields = [Field("cmd", commandName(command.type), .null), Field.number("cmdsize", command.size)] + body.fields
            let width = labelWidth(fields + body.lists.filter { $0.title == nil }.flatMap { $0.items.joined() })
            for field in fields { line(field, width) }
            for list in body.lists {
                for item in list.items {
                    if let title = list.title { out.write(title + "\n") }
                    let itemWidth = list.title == nil ? width : labelWidth(item)
                    for field in item { line(field, itemWidth) }
                }
            }
        }
    }

    /// `LC_*`, or the number of a command this reader does not know.
    static func commandName(_ type: LoadCommandType) -> String {
        type.name ?? "0x" + Text.hex(UInt64(type.rawValue), width: 8, uppercase: false) + " (unknown)"
    }

    /// The `load_commands` array, one object per command: `index`, `cmd` (null when unknown),
    /// `cmd_value`, `cmdsize`, its fields by `<mach-o/loader.h>` name, and its lists as arrays.
    static func writeJSON<Output: TextOutputStream>(_ image: MachOImage, json: inout JSONStream, to out: inout Output) throws(MachOError) {
        try json.array("load_commands", count: image.loadCommands.count, to: &out) { (index) throws(MachOError) in
            let command = image.loadCommands[index]
            let body = try Self.body(command, image)
            let head: [(String, JSONValue)] = [
                ("index", .int(Int64(index))), ("cmd", command.type.name.map(JSONValue.string) ?? .null),
                ("cmd_value", .uint(UInt64(command.type.rawValue))), ("cmdsize", .uint(UInt64(command.size))),
            ]
            let lists = body.lists.map { list in
                (list.key, JSONValue.array(list.items.map { item in
                    // A list of single unnamed values (a linker option's strings) is an array of them.
                    item.count == 1 && item[0].key == list.key ? item[0].value : .object(item.map { ($0.key, $0.value) })
                }))
            }
            return .object(head + body.fields.map { ($0.key, $0.value) } + lists)
        }
    }

    // MARK: - Each command's fields

    static func body(_ command: LoadCommand, _ image: MachOImage) throws(MachOError) -> Body {
        var body = Body()
        switch command.payload {
        case let .segment(segment):
            body.fields = [
                .string("segname", segment.name),
                .address("vmaddr", segment.vmAddress), .address("vmsize", segment.vmSize),
                .number("fileoff", segment.fileOffset), .number("filesize", segment.fileSize),
                .string("maxprot", segment.maxProtection.description), .string("initprot", segment.initialProtection.description),
                .number("nsects", segment.sections.count),
                .flags("flags", segment.flags, MachONames.segmentFlags(segment.flags)),
            ]
            body.lists = [List(key: "sections", title: "Section", items: segment.sections.map(sectionFields))]
        case let .dylib(_, dylib), let .idDylib(dylib): body.fields = dylibFields(dylib)
        case let .rpath(path): body.fields = [.string("path", path)]
        case let .main(entry): body.fields = [.number("entryoff", entry.entryOffset), .number("stacksize", entry.stackSize)]
        case let .uuid(bytes): body.fields = [.string("uuid", bytes.uuidString)]
        case let .buildVersion(version):
            body.fields = [
                Field("platform", MachONames.platform(version.platform), .uint(UInt64(version.platform))),
                Field(nil, key: "platform_name", "", .string(MachONames.platform(version.platform))),
                Field("sdk", MachONames.sdk(version.sdk), version.sdk == 0 ? .null : .string(version.sdk.versionString)),
                .version("minos", version.minOS),
                .number("ntools", version.tools.count),
            ]
            body.lists = [List(key: "tools", title: nil, items: version.tools.map { tool in
                [Field("tool", MachONames.buildTool(tool.tool), .string(MachONames.buildTool(tool.tool))), .version("version", tool.version)]
            })]
        case let .versionMin(version):
            body.fields = [
                .version("version", version.version),
                Field("sdk", MachONames.sdk(version.sdk), version.sdk == 0 ? .null : .string(version.sdk.versionString)),
            ]
        case let .symtab(table):
            body.fields = [
                .number("symoff", table.symbolOffset), .number("nsyms", table.symbolCount),
                .number("stroff", table.stringOffset), .number("strsize", table.stringSize),
            ]
        case let .dysymtab(table): body.fields = zip(DysymtabCommand.fieldNames, table.fields).map { Field.number($0, $1) }
        case let .dyldInfo(info):
            body.fields = [("rebase", info.rebase), ("bind", info.bind), ("weak_bind", info.weakBind), ("lazy_bind", info.lazyBind), ("export", info.export)]
                .flatMap { name, data in [Field.number(name + "_off", data.dataOffset), Field.number(name + "_size", data.dataSize)] }
        case let .linkeditData(data): body.fields = [.number("dataoff", data.dataOffset), .number("datasize", data.dataSize)]
        case let .dylinker(name): body.fields = [.string("name", name)]
        case .raw: body = try rawBody(command, image)
        }
        return body
    }

    static func sectionFields(_ section: Section) -> [Field] {
        let attributes = MachONames.sectionAttributes(section.flags)
        return [
            .string("sectname", section.name), .string("segname", section.segmentName),
            .address("addr", section.address), .address("size", section.size),
            .number("offset", section.fileOffset),
            Field("align", "2^\(section.alignment) (\(section.alignment < 32 ? String(1 << section.alignment) : "?"))", .uint(UInt64(section.alignment))),
            .number("reloff", section.relocationOffset), .number("nreloc", section.relocationCount),
            Field("flags", "0x" + Text.hex(UInt64(section.flags), width: 8, uppercase: false), .uint(UInt64(section.flags))),
            .string("type", MachONames.sectionType(section.type)),
            Field("attributes", attributes.isEmpty ? "(none)" : attributes.joined(separator: " "), .array(attributes.map(JSONValue.string))),
            .number("reserved1", section.reserved1), .number("reserved2", section.reserved2), .number("reserved3", section.reserved3),
        ]
    }

    static func dylibFields(_ dylib: DylibCommand) -> [Field] {
        [
            .string("name", dylib.installName),
            .number("time stamp", key: "timestamp", dylib.timestamp),
            .version("current version", key: "current_version", dylib.currentVersion),
            .version("compatibility version", key: "compatibility_version", dylib.compatibilityVersion),
        ]
    }

    /// The fields of the commands ``LoadCommand`` keeps raw, parsed from their bytes.
    static func rawBody(_ command: LoadCommand, _ image: MachOImage) throws(MachOError) -> Body {
        if command.type == .linkerOption {
            let option = try LinkerOption(parsing: try image.commandView(command))
            let strings = option.strings.enumerated().map { [Field("string #\($0.offset + 1)", key: "strings", $0.element, .string($0.element))] }
            return Body(fields: [.number("count", option.count)], lists: [List(key: "strings", title: nil, items: strings)])
        }
        return Body(fields: try rawFields(command, image))
    }

    /// How one field of a raw command is read from its bytes (at a byte offset) and shown.
    enum RawField {
        case u32(String, Int), u64(String, Int), address(String, Int), fixedString(String, Int, length: Int), lcString(String, Int)
    }

    /// The fields of the raw commands printed field by field, under llvm-objdump's names.
    static let rawLayouts: [LoadCommandType: [RawField]] = [
        .subFramework: [.lcString("umbrella", 8)], .subUmbrella: [.lcString("sub_umbrella", 8)],
        .subLibrary: [.lcString("sub_library", 8)], .subClient: [.lcString("client", 8)], .targetTriple: [.lcString("triple", 8)],
        .encryptionInfo: [.u32("cryptoff", 8), .u32("cryptsize", 12), .u32("cryptid", 16)],
        .encryptionInfo64: [.u32("cryptoff", 8), .u32("cryptsize", 12), .u32("cryptid", 16), .u32("pad", 20)],
        .note: [.fixedString("data_owner", 8, length: 16), .u64("offset", 24), .u64("size", 32)],
        .routines64: [.address("init_address", 8), .u64("init_module", 16)] + (1...6).map { .u64("reserved\($0)", 16 + 8 * $0) },
        .filesetEntry: [.address("vmaddr", 8), .u64("fileoff", 16), .lcString("entry_id", 24)],
        .twoLevelHints: [.u32("offset", 8), .u32("nhints", 12)],
    ]

    static func rawFields(_ command: LoadCommand, _ image: MachOImage) throws(MachOError) -> [Field] {
        let view = try image.commandView(command)
        if command.type == .sourceVersion { return [.string("version", MachONames.sourceVersion(try SourceVersion(parsing: view)))] }
        return try (rawLayouts[command.type] ?? []).map { (field) throws(MachOError) -> Field in
            switch field {
            case let .u32(name, offset): .number(name, try view.u32(offset))
            case let .u64(name, offset): .number(name, try view.u64(offset))
            case let .address(name, offset): .address(name, try view.u64(offset))
            case let .fixedString(name, offset, length): .string(name, try view.fixedString(offset, length))
            case let .lcString(name, offset): .string(name, try view.lcString(at: offset))
            }
        }
    }
}
