import MachOReader

/// The default `dyld3 inspect` output: one block per selected slice with the header (its
/// flags by name), the platform with its minimum OS and SDK versions, identity, segments,
/// dependencies and the kind of fixup information.
package enum ImageSummary {
    /// Writes the summary of each selected slice of the file at `path` to `out`.
    package static func write<Output: TextOutputStream>(
        path: String, file bytes: ByteView, arch: ArchSelection, to out: inout Output
    ) throws(MachOError) {
        try ObjdumpReport.forEachSlice(path: path, file: bytes, arch == .host ? .all : arch) { (file, slice, image, _) throws(MachOError) in
            out.write(try render(path: path, slice: slice, image: image, universal: file.isUniversal))
        }
    }

    /// ``write(path:file:arch:to:)`` into a string (tests).
    package static func render(path: String, bytes: [UInt8], arch: ArchSelection) throws(MachOError) -> String {
        var out = ""
        try write(path: path, file: ByteView(bytes), arch: arch, to: &out)
        return out
    }

    static func render(path: String, slice: UniversalFile.Slice, image: MachOImage, universal: Bool) throws(MachOError) -> String {
        var out = "\(path) (\(image.header.cpu.name)\(universal ? ", universal slice at 0x\(Text.hex(UInt64(slice.offset)))" : "")):\n"
        out += "  type          \(image.header.fileType)\n"
        let flags = image.header.flags.rawValue
        out += "  flags         0x\(Text.hex(UInt64(flags), width: 8, uppercase: false))"
            + (flags == 0 ? "" : " " + MachONames.headerFlags(flags).joined(separator: " | ")) + "\n"
        for target in BuildTarget.all(image) {
            out += "  platform      \(target.platformName)\n"
            out += "  min OS        \(target.minOS.versionString)\n"
            out += "  SDK           \(MachONames.sdk(target.sdk))\n"
        }
        out += "  load commands \(image.loadCommands.count) (\(image.header.commandsSize) bytes)\n"
        if let uuid = image.uuid { out += "  uuid          \(uuid.uuidString)\n" }
        if let id = image.id { out += "  id            \(id.installName)\n" }
        if let entry = image.entryPoint { out += "  entry         __TEXT+0x\(Text.hex(entry.entryOffset))\n" }
        out += "  fixups        \(fixupStyle(image))\n"
        out += "  segments\n"
        for segment in image.segments {
            out += "    \(Text.pad(segment.name, 16)) vm 0x\(Text.hex(segment.vmAddress))+0x\(Text.hex(segment.vmSize))"
                + " file 0x\(Text.hex(segment.fileOffset))+0x\(Text.hex(segment.fileSize)) \(segment.initialProtection)\n"
        }
        if !image.dependencies.isEmpty || !image.rpaths.isEmpty {
            out += "  dependencies\n"
            for dependency in image.dependencies { out += "    \(Text.pad(dependency.kind.rawValue, 9))\(dependency.installName)\n" }
            for rpath in image.rpaths { out += "    rpath    \(rpath)\n" }
        }
        if !image.initializerSections.isEmpty {
            out += "  initializers  " + image.initializerSections.map { "\($0.segmentName),\($0.name)" }.joined(separator: " ") + "\n"
        }
        return out
    }

    static func fixupStyle(_ image: MachOImage) -> String {
        if image.chainedFixups != nil { return "chained (LC_DYLD_CHAINED_FIXUPS)" }
        if image.dyldInfo != nil { return "opcodes (LC_DYLD_INFO)" }
        return "none"
    }
}
