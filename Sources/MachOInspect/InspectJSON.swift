import MachOReader

/// `dyld3 inspect --json`: the same data as the text tables, for tools. One object per
/// file with a `slices` array; each slice carries its header, segments and dependencies,
/// plus one member per asked-for table (all of them when none is asked for). The document
/// is written as it is decoded (``JSONStream``), so a table of any length costs constant
/// memory; after an error, what was written stays and the document is left unfinished.
package enum InspectJSON {
    package static func write<Output: TextOutputStream>(
        path: String, file bytes: ByteView, tables: Set<InspectTable>, arch: ArchSelection, to out: inout Output
    ) throws(MachOError) {
        do {
            let file = try UniversalFile(parsing: bytes)
            let wanted = tables.isEmpty ? Set(InspectTable.allCases) : tables
            let slices = try ObjdumpReport.selectSlices(file, arch == .host ? .all : arch)
            var json = JSONStream()
            json.beginObject(to: &out)
            json.members([("schema_version", .int(JSONValue.schemaVersion)), ("file", .string(path)), ("universal", .bool(file.isUniversal))], to: &out)
            json.beginArray("slices", to: &out)
            for (slice, _) in slices { try writeSlice(try file.image(slice), slice: slice, tables: wanted, json: &json, to: &out) }
            json.end(to: &out)
            json.end(to: &out)
            out.write("\n")
        } catch {
            throw error.inFile(path)
        }
    }

    static func writeSlice<Output: TextOutputStream>(
        _ image: MachOImage, slice: UniversalFile.Slice, tables: Set<InspectTable>, json: inout JSONStream, to out: inout Output
    ) throws(MachOError) {
        json.beginObject(to: &out)
        json.members([
            ("arch", .string(image.header.cpu.name)), ("offset", .int(Int64(slice.offset))),
            ("size_bytes", .int(Int64(slice.size))), ("file_type", .string(image.header.fileType.description)),
            ("flags", .uint(UInt64(image.header.flags.rawValue))),
            ("flag_names", .array(MachONames.headerFlags(image.header.flags.rawValue).map(JSONValue.string))),
            ("uuid", image.uuid.map { .string($0.uuidString) } ?? .null),
        ], to: &out)
        // The first target the image names (the only one, but in a zippered image), then all.
        let targets = BuildTarget.all(image)
        json.members([
            ("platform", targets.first.map { .string($0.platformName) } ?? .null),
            ("min_os", targets.first.map { .string($0.minOS.versionString) } ?? .null),
            ("sdk", targets.first.flatMap { $0.sdk == 0 ? nil : .string($0.sdk.versionString) } ?? .null),
            ("platforms", .array(targets.map(\.json))),
            ("fixup_style", .string(image.chainedFixups != nil ? "chained" : image.dyldInfo != nil ? "opcodes" : "none")),
            ("segments", .array(image.segments.map { segment in
                .object([
                    ("name", .string(segment.name)), ("vm_address", .uint(segment.vmAddress)), ("vm_size_bytes", .uint(segment.vmSize)),
                    ("file_offset", .uint(segment.fileOffset)), ("file_size_bytes", .uint(segment.fileSize)),
                    ("protection", .string(segment.initialProtection.description)),
                    ("sections", .array(segment.sections.map { .string($0.name) })),
                ])
            })),
        ], to: &out)
        if tables.contains(.deps) {
            json.member("id", image.id.map { .string($0.installName) } ?? .null, to: &out)
            json.member("dependencies", .array(image.dependencies.enumerated().map { index, dependency in
                .object([
                    ("ordinal", .int(Int64(index + 1))), ("install_name", .string(dependency.installName)),
                    ("kind", .string(dependency.kind.rawValue)),
                    ("current_version", .string(dependency.command.currentVersion.versionString)),
                    ("compatibility_version", .string(dependency.command.compatibilityVersion.versionString)),
                ])
            }), to: &out)
            json.member("rpaths", .array(image.rpaths.map(JSONValue.string)), to: &out)
        }
        if tables.contains(.loadCommands) { try LoadCommandsTable.writeJSON(image, json: &json, to: &out) }
        try writeFixups(image, tables: tables, json: &json, to: &out)
        if tables.contains(.objc) || tables.contains(.objcSummary) { try ObjCTable.writeJSON(image, json: &json, to: &out) }
        if tables.contains(.codeSignature) { try CodeSignatureTable.writeJSON(image, json: &json, to: &out) }
        try DyldFeaturesTable.writeJSON(image, tables: tables, json: &json, to: &out)
        json.end(to: &out)
    }
}

/// The fixup and export members of `dyld3 inspect --json`, built from the reader's
/// decoded records (not from the llvm-compatible text, which copies llvm's quirks) and
/// written one record at a time.
extension InspectJSON {
    static func writeFixups<Output: TextOutputStream>(
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
