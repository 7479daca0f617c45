import MachOReader

/// `--code-signature`: the embedded signature's SuperBlob and every blob the reader knows,
/// as text or JSON. Nothing is verified here (`dyld3 codesign verify` does that) but the
/// cdHash of each CodeDirectory is shown.
enum CodeSignatureTable {
    static func write<Output: TextOutputStream>(_ image: MachOImage, to out: inout Output) throws(MachOError) {
        guard let signature = try CodeSignature.read(from: image) else {
            out.write("Code signature: none\n")
            return
        }
        let command = signature.command
        out.write("Code signature: LC_CODE_SIGNATURE data 0x\(hex(command.dataOffset))+0x\(hex(command.dataSize))\n")
        let superBlob = signature.superBlob
        out.write("  SuperBlob magic 0x\(hex(superBlob.magic)) length 0x\(hex(superBlob.length)) blobs \(superBlob.index.count)\n")
        for blob in superBlob.index {
            out.write("    slot 0x\(Text.pad(hex(blob.type), 6)) offset 0x\(Text.pad(hex(blob.offset), 6)) length 0x\(Text.pad(hex(UInt32(blob.view.count)), 6)) magic 0x\(hex(blob.magic)) \(blob.name)\n")
        }
        for directory in signature.codeDirectories {
            out.write("  \(CodeSignatureNames.slotName(directory.slot))\n")
            for (label, value) in fields(directory) { out.write("    \(Text.pad(label, 15)) \(value)\n") }
        }
        if let requirements = signature.requirements {
            out.write("  Requirements \(requirements.entries.count)\n")
            for entry in requirements.entries {
                out.write("    \(Text.pad(entry.typeName, 10)) offset 0x\(hex(entry.offset)) length \(entry.view.count) kind \(entry.kind)\n")
            }
        }
        if let entitlements = signature.entitlements {
            out.write("  Entitlements (XML, \(entitlements.blob.count) bytes)\n")
            let xml = entitlements.xml.hasSuffix("\n") ? String(entitlements.xml.dropLast()) : entitlements.xml
            for line in xml.split(separator: "\n", omittingEmptySubsequences: false) { out.write("    \(line)\n") }
        }
        if let der = signature.derEntitlements {
            out.write("  Entitlements (DER, \(der.blob.count) bytes, version \(der.version))\n")
            for entry in der.entries { out.write("    \(entry.key) = \(entry.value)\n") }
        }
        if let cms = signature.cms { out.write("  CMS signature \(cms.cms.count) bytes (not validated)\n") }
    }

    static func writeJSON<Output: TextOutputStream>(_ image: MachOImage, json: inout JSONStream, to out: inout Output) throws(MachOError) {
        json.member("code_signature", try CodeSignature.read(from: image).map(object) ?? .null, to: &out)
    }

    static func object(_ signature: CodeSignature) -> JSONValue {
        let blobs: [JSONValue] = signature.superBlob.index.map { blob in
            .object([
                ("slot", .uint(UInt64(blob.type))), ("name", .string(blob.name)), ("offset", .uint(UInt64(blob.offset))),
                ("length", .int(Int64(blob.view.count))), ("magic", .uint(UInt64(blob.magic))),
            ])
        }
        let directories: [JSONValue] = signature.codeDirectories.map { directory in
            .object([
                ("slot", .uint(UInt64(directory.slot))), ("version", .uint(UInt64(directory.version))),
                ("flags", .uint(UInt64(directory.flags))), ("flag_names", .string(CodeSignatureNames.flagNames(directory.flags))),
                ("identifier", .string(directory.identifier)), ("team_id", directory.teamID.map(JSONValue.string) ?? .null),
                ("hash_type", .string(directory.hashType.description)), ("hash_size", .int(Int64(directory.hashSize))),
                ("platform", .int(Int64(directory.platform))), ("page_size", .int(Int64(directory.pageSize))),
                ("code_limit", .uint(directory.codeLimit)), ("code_slots", .int(Int64(directory.nCodeSlots))),
                ("special_slots", .int(Int64(directory.nSpecialSlots))),
                ("scatter_offset", directory.scatterOffset.map { .uint(UInt64($0)) } ?? .null),
                ("exec_seg_base", directory.execSegBase.map(JSONValue.uint) ?? .null),
                ("exec_seg_limit", directory.execSegLimit.map(JSONValue.uint) ?? .null),
                ("exec_seg_flags", directory.execSegFlags.map(JSONValue.uint) ?? .null),
                ("runtime", directory.runtime.map { .uint(UInt64($0)) } ?? .null), ("cdhash", .string(directory.cdHash.hex)),
            ])
        }
        return .object([
            ("data_offset", .uint(UInt64(signature.command.dataOffset))),
            ("data_size", .uint(UInt64(signature.command.dataSize))),
            ("superblob_length", .uint(UInt64(signature.superBlob.length))), ("blobs", .array(blobs)),
            ("code_directories", .array(directories)), ("cdhash", .string(signature.cdHash.hex)),
            ("requirements", signature.requirements.map { requirements in
                .array(requirements.entries.map { .object([("type", .string($0.typeName)), ("length", .int(Int64($0.view.count)))]) })
            } ?? .null),
            ("entitlements_xml", signature.entitlements.map { .string($0.xml) } ?? .null),
            ("entitlements_der", signature.derEntitlements.map { der in .object(der.entries.map { ($0.key, .string($0.value)) }) } ?? .null),
            ("cms_size", signature.cms.map { .int(Int64($0.cms.count)) } ?? .null),
        ])
    }

    static func fields(_ directory: CS_CodeDirectory) -> [(String, String)] {
        var rows: [(String, String)] = [
            ("version", "0x\(hex(directory.version))"),
            ("flags", "0x\(hex(directory.flags)) (\(CodeSignatureNames.flagNames(directory.flags)))"),
            ("identifier", directory.identifier),
            ("team ID", directory.teamID ?? "none"),
            ("hash type", "\(directory.hashType) (\(directory.hashSize) bytes)"),
            ("platform", String(directory.platform)),
            ("page size", String(directory.pageSize)),
            ("code limit", "0x\(Text.hex(directory.codeLimit))"),
            ("code slots", String(directory.nCodeSlots)),
            ("special slots", String(directory.nSpecialSlots)),
        ]
        if let scatter = directory.scatterOffset, scatter != 0 { rows.append(("scatter", "0x\(hex(scatter))")) }
        if let base = directory.execSegBase, let limit = directory.execSegLimit, let flags = directory.execSegFlags {
            rows.append(("exec segment", "base 0x\(Text.hex(base)) limit 0x\(Text.hex(limit)) flags 0x\(Text.hex(flags)) (\(CodeSignatureNames.execSegFlagNames(flags)))"))
        }
        if let runtime = directory.runtime { rows.append(("runtime", "0x\(hex(runtime))")) }
        if let linkage = directory.linkage {
            rows.append(("linkage", "hash type \(linkage.hashType) application \(linkage.applicationType)/\(linkage.applicationSubtype) offset 0x\(hex(linkage.offset)) size \(linkage.size)"))
        }
        rows.append(("cdhash", directory.cdHash.hex))
        return rows
    }

    static func hex(_ value: UInt32) -> String { Text.hex(UInt64(value)) }
}
