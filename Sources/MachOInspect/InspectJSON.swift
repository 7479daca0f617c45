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
            ("segments", .array(image.segments.map(segmentObject))),
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
        try FixupJSON.write(image, tables: tables, json: &json, to: &out)
        if tables.contains(.objc) || tables.contains(.objcSummary) { try ObjCTable.writeJSON(image, json: &json, to: &out) }
        if tables.contains(.codeSignature) { try CodeSignatureTable.writeJSON(image, json: &json, to: &out) }
        try DyldFeaturesTable.writeJSON(image, tables: tables, json: &json, to: &out)
        json.end(to: &out)
    }

    static func segmentObject(_ segment: Segment) -> JSONValue {
        .object([
            ("name", .string(segment.name)), ("vm_address", .uint(segment.vmAddress)), ("vm_size_bytes", .uint(segment.vmSize)),
            ("file_offset", .uint(segment.fileOffset)), ("file_size_bytes", .uint(segment.fileSize)),
            ("protection", .string(segment.initialProtection.description)),
            ("sections", .array(segment.sections.map { .string($0.name) })),
        ])
    }
}
