import MachOReader

/// `dyld3 inspect --json`: the same data as the text tables, for tools. One object per
/// file with a `slices` array; each slice carries its header, segments and dependencies,
/// plus one member per asked-for table (all of them when none is asked for).
public enum InspectJSON {
    public static func render(
        path: String, file bytes: ByteView, tables: Set<InspectTable>, arch: ArchSelection
    ) throws(MachOError) -> String {
        do {
            let file = try UniversalFile(parsing: bytes)
            let wanted = tables.isEmpty ? Set(InspectTable.allCases) : tables
            var slices: [JSONValue] = []
            for (slice, _) in try ObjdumpReport.selectSlices(file, arch == .host ? .all : arch) {
                slices.append(try sliceObject(try file.image(slice), slice: slice, tables: wanted))
            }
            return JSONValue.object([
                ("file", .string(path)),
                ("universal", .bool(file.isUniversal)),
                ("slices", .array(slices)),
            ]).serialized()
        } catch {
            throw error.inFile(path)
        }
    }

    static func sliceObject(_ image: MachOImage, slice: UniversalFile.Slice, tables: Set<InspectTable>) throws(MachOError) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("arch", .string(image.header.cpu.name)),
            ("offset", .int(Int64(slice.offset))),
            ("size", .int(Int64(slice.size))),
            ("fileType", .string(image.header.fileType.description)),
            ("flags", .uint(UInt64(image.header.flags.rawValue))),
            ("uuid", image.uuid.map { .string(ImageSummary.formatUUID($0)) } ?? .null),
            ("fixupStyle", .string(image.chainedFixups != nil ? "chained" : image.dyldInfo != nil ? "opcodes" : "none")),
            ("segments", .array(image.segments.map(segmentObject))),
        ]
        if tables.contains(.deps) {
            members.append(("id", image.id.map { .string($0.installName) } ?? .null))
            members.append(("dependencies", .array(image.dependencies.enumerated().map { index, dependency in
                .object([
                    ("ordinal", .int(Int64(index + 1))),
                    ("installName", .string(dependency.installName)),
                    ("kind", .string(dependency.kind.rawValue)),
                    ("currentVersion", .string(versionString(dependency.command.currentVersion))),
                    ("compatibilityVersion", .string(versionString(dependency.command.compatibilityVersion))),
                ])
            })))
            members.append(("rpaths", .array(image.rpaths.map(JSONValue.string))))
        }
        members += try FixupJSON.members(image, tables: tables)
        return .object(members)
    }

    static func segmentObject(_ segment: Segment) -> JSONValue {
        .object([
            ("name", .string(segment.name)),
            ("vmAddress", .uint(segment.vmAddress)),
            ("vmSize", .uint(segment.vmSize)),
            ("fileOffset", .uint(segment.fileOffset)),
            ("fileSize", .uint(segment.fileSize)),
            ("protection", .string(segment.initialProtection.description)),
            ("sections", .array(segment.sections.map { .string($0.name) })),
        ])
    }

    /// `X.Y.Z` from a packed 32-bit dylib version.
    static func versionString(_ version: UInt32) -> String {
        "\(version >> 16).\((version >> 8) & 0xff).\(version & 0xff)"
    }
}
