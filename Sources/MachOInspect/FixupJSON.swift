import MachOReader

/// The fixup and export members of `dyld3 inspect --json`, built from the reader's
/// decoded records (not from the llvm-compatible text, which copies llvm's quirks) and
/// written one record at a time.
enum FixupJSON {
    static func write<Output: TextOutputStream>(
        _ image: MachOImage, tables: Set<InspectTable>, json: inout JSONStream, to out: inout Output
    ) throws(MachOError) {
        if tables.contains(.rebase) {
            try json.array("rebases", to: &out) { (element) throws(MachOError) in
                try image.forEachRebaseFixup { (rebase) throws(MachOError) in
                    element(.object(location(image, rebase.segmentIndex, rebase.segmentOffset, rebase.address) + [("type", .int(Int64(rebase.type.rawValue)))]))
                }
            }
        }
        for (table, key, stream) in [
            (InspectTable.bind, "binds", BindStreamKind.regular), (.lazyBind, "lazy_binds", .lazy), (.weakBind, "weak_binds", .weak),
        ] where tables.contains(table) {
            try json.array(key, to: &out) { (element) throws(MachOError) in
                try image.forEachBindFixup(in: stream) { (fixup) throws(MachOError) in element(bind(fixup, image)) }
            }
        }
        let chained = try image.parseChainedFixups()
        if tables.contains(.chainedFixups) || tables.contains(.dyldInfo), let chained {
            json.beginObject("chained_fixups", to: &out)
            try writeChained(chained, image, json: &json, to: &out)
            json.end(to: &out)
        }
        if tables.contains(.dyldInfo), chained == nil, image.dyldInfo != nil { try writeOpcodeRows(image, json: &json, to: &out) }
        if tables.contains(.exportsTrie) {
            try json.array("exports", to: &out) { (element) throws(MachOError) in
                try image.exportTrie()?.forEachSymbol { (symbol) throws(MachOError) in element(export(symbol)) }
            }
        }
    }

    static func location(_ image: MachOImage, _ segmentIndex: Int, _ offset: UInt64, _ address: UInt64) -> [(String, JSONValue)] {
        [("segment", .string(image.segments[segmentIndex].name)), ("segment_offset", .uint(offset)), ("address", .uint(address))]
    }

    static func library(_ ordinal: Int, _ image: MachOImage) -> JSONValue {
        ordinal > 0 && ordinal <= image.dependencies.count
            ? .string(image.dependencies[ordinal - 1].installName)
            : .string(LibraryShortName.forOrdinal(ordinal, in: image))
    }

    static func bind(_ bind: BindFixup, _ image: MachOImage) -> JSONValue {
        var members: [(String, JSONValue)] = bind.location.map { location(image, $0.segmentIndex, $0.segmentOffset, $0.address) } ?? [("strong_definition", .bool(true))]
        members += [
            ("type", .int(Int64(bind.type.rawValue))), ("ordinal", .int(Int64(bind.libraryOrdinal))),
            ("library", library(bind.libraryOrdinal, image)), ("symbol", .string(bind.symbolName)), ("addend", .int(bind.addend)),
            ("weak_import", .bool(bind.flags.contains(.weakImport))),
        ]
        return .object(members)
    }

    static func writeChained<Output: TextOutputStream>(
        _ chained: ChainedFixups, _ image: MachOImage, json: inout JSONStream, to out: inout Output
    ) throws(MachOError) {
        json.members([
            ("imports_format", .string(chained.header.importsFormat.name)),
            ("pointer_formats", .array(chained.segments.map { .string($0.pointerFormat.name) })),
        ], to: &out)
        json.member("imports", .array(chained.imports.map { entry in
            .object([
                ("ordinal", .int(Int64(entry.libraryOrdinal))), ("library", library(entry.libraryOrdinal, image)),
                ("symbol", .string(entry.name)), ("addend", .int(entry.addend)), ("weak_import", .bool(entry.weakImport)),
            ])
        }), to: &out)
        try json.array("fixups", to: &out) { (element) throws(MachOError) in
            try chained.forEachFixup(in: image) { (fixup) throws(MachOError) in
                var members = location(image, fixup.segmentIndex, fixup.offsetInSegment, fixup.address) + [("raw", .uint(fixup.rawValue))]
                switch fixup.pointer {
                case let .rebase(rebase), let .authRebase(rebase, _):
                    members += [("kind", .string("rebase")), ("target", .uint(rebase.targetAddress(imageBase: image.preferredLoadAddress))),
                                ("high8", .int(Int64(rebase.high8)))]
                case let .bind(bind), let .authBind(bind, _):
                    members += [("kind", .string("bind")), ("import", .int(Int64(bind.importOrdinal))), ("addend", .int(bind.addend))]
                case let .nonPointer(value): members += [("kind", .string("value")), ("value", .uint(UInt64(value)))]
                }
                if let auth = fixup.pointer.authentication {
                    members += [("key", .string(auth.key.name)), ("diversity", .int(Int64(auth.diversity))),
                                ("address_diversity", .bool(auth.addressDiversity))]
                }
                element(.object(members))
            }
        }
    }

    /// `dyld_info`: the rows `--dyld-info` prints for an opcode-based image (every rebase,
    /// bind, lazy bind and weak bind, in address order), with the full library name.
    static func writeOpcodeRows<Output: TextOutputStream>(_ image: MachOImage, json: inout JSONStream, to out: inout Output) throws(MachOError) {
        let rows = try OpcodeDyldInfoRows(image)
        json.array("dyld_info", to: &out) { element in
            rows.forEach { row in
                var members: [(String, JSONValue)] = [
                    ("segment", .string(row.segment)), ("section", .string(row.section)), ("address", .uint(row.address)),
                    ("raw", .uint(row.pointer)), ("kind", .string(row.type)),
                ]
                if let addend = row.addend {
                    members += [("ordinal", .int(Int64(row.libraryOrdinal))), ("library", library(row.libraryOrdinal, image)),
                                ("symbol", .string(row.symbol)), ("addend", .int(addend)), ("weak_import", .bool(row.weakImport))]
                } else {
                    members.append(("target", .uint(row.targetAddress)))
                }
                element(.object(members))
            }
        }
    }

    static func export(_ symbol: ExportedSymbol) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("name", .string(symbol.name)), ("kind", .string("\(symbol.kind)")),
            ("weak_definition", .bool(symbol.isWeakDefinition)),
        ]
        switch symbol.definition {
        case let .image(offset): members.append(("offset", .uint(offset)))
        case let .stubAndResolver(stub, resolver): members += [("stub_offset", .uint(stub)), ("resolver_offset", .uint(resolver))]
        case let .functionVariant(defaultOffset, tableIndex):
            members += [("offset", .uint(defaultOffset)), ("variant_table", .uint(tableIndex))]
        case let .reexport(ordinal, importedName):
            members += [("reexport_ordinal", .int(Int64(ordinal))), ("imported_name", .string(importedName.isEmpty ? symbol.name : importedName))]
        }
        return .object(members)
    }
}
