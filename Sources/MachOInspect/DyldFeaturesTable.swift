import MachOReader

/// `--thread-locals` and `--interpose`: what a loader sets up beyond fixups (docs/dyld-rules.md,
/// rules 20 and 23), read from one image. Each slot's fixup comes from the same rows as
/// `--dyld-info` (chained or opcode fixups); names come from the image's export trie.
enum DyldFeaturesTable {
    /// The image's fixups by address, as `--dyld-info` rows.
    static func rows(_ image: MachOImage) throws(MachOError) -> [UInt64: DyldInfoRow] {
        var byAddress: [UInt64: DyldInfoRow] = [:]
        if var rows = try ChainedDyldInfoRows(image) {
            try rows.forEach { byAddress[$0.address] = $0 }
        } else if image.dyldInfo != nil {
            try OpcodeDyldInfoRows(image).forEach { byAddress[$0.address] = $0 }
        }
        return byAddress
    }

    /// Exported names by address, the first in trie order where several share one.
    static func names(_ image: MachOImage) throws(MachOError) -> [UInt64: String] {
        let named = try (image.exportTrie()?.allSymbols() ?? []).compactMap { symbol in
            symbol.imageOffset.map { (image.preferredLoadAddress &+ $0, symbol.name) }
        }
        return Dictionary(named, uniquingKeysWith: { first, _ in first })
    }

    /// What a fixup row points at, named: `_symbol (dylib)` for a bind, the exported name or
    /// the address for a rebase, `none` for a slot without a fixup.
    static func describe(_ row: DyldInfoRow?, names: [UInt64: String]) -> String {
        guard let row else { return "none" }
        if row.addend != nil {
            return row.symbol + (row.dylib.isEmpty ? "" : " (\(row.dylib))") + (row.addend.map { $0 != 0 ? " + \($0)" : "" } ?? "")
        }
        let address = hex(row.targetAddress)
        return names[row.targetAddress].map { "\(address) \($0)" } ?? address
    }

    /// Each thread-local descriptor: where it is, the variable it names, what its thunk is
    /// bound to, and the variable's offset in the image's template.
    static func descriptors(_ image: MachOImage) throws(MachOError) -> [(address: UInt64, variable: String?, thunk: String, offset: UInt64)] {
        let sections = image.sections.filter { $0.type == Section.typeThreadLocalVariables }
        guard !sections.isEmpty else { return [] }
        let rows = try rows(image), names = try names(image)
        var descriptors: [(address: UInt64, variable: String?, thunk: String, offset: UInt64)] = []
        for section in sections {
            for slot in stride(from: 0, to: section.size - section.size % 24, by: 24) {
                let address = section.address + slot
                let offset = try image.view.u64(Int(UInt64(section.fileOffset) + slot + 16))
                let thunk = describe(rows[address], names: names)
                descriptors.append((address, names[address], thunk, offset))
            }
        }
        return descriptors
    }

    /// Each interposing tuple: where it is, and its replacement and replacee.
    static func tuples(_ image: MachOImage) throws(MachOError) -> [(address: UInt64, replacement: String, replacee: String)] {
        let sections = image.sections.filter(\.holdsInterposingTuples)
        guard !sections.isEmpty else { return [] }
        let rows = try rows(image), names = try names(image)
        return sections.flatMap { section in
            stride(from: section.address, to: section.address + section.size - section.size % 16, by: 16).map { address in
                (address, describe(rows[address], names: names), describe(rows[address + 8], names: names))
            }
        }
    }

    static func writeThreadLocals<Output: TextOutputStream>(_ image: MachOImage, to out: inout Output) throws(MachOError) {
        let descriptors = try descriptors(image)
        out.write("thread-local variables:" + (descriptors.isEmpty ? " none\n" : "\n"))
        guard !descriptors.isEmpty else { return }
        for section in image.sections where [Section.typeThreadLocalRegular, Section.typeThreadLocalZerofill].contains(section.type) {
            out.write("\(section.segmentName),\(section.name) \(hex(section.address)) \(section.size) bytes"
                + (section.type == Section.typeThreadLocalRegular ? " (initial values)" : " (zero-filled)") + "\n")
        }
        out.write("address            variable                        offset     thunk\n")
        for descriptor in descriptors {
            out.write("0x" + Text.hex(descriptor.address, width: 16, uppercase: false) + " "
                + (descriptor.variable ?? "(not exported)").padding(toLength: 31, withPad: " ", startingAt: 0) + " "
                + hex(descriptor.offset).padding(toLength: 10, withPad: " ", startingAt: 0) + " "
                + descriptor.thunk + "\n")
        }
    }

    static func writeInterpose<Output: TextOutputStream>(_ image: MachOImage, to out: inout Output) throws(MachOError) {
        let tuples = try tuples(image)
        out.write("interposing tuples:" + (tuples.isEmpty ? " none\n" : "\n"))
        guard !tuples.isEmpty else { return }
        out.write("address            replacement -> replacee\n")
        for tuple in tuples {
            out.write("0x" + Text.hex(tuple.address, width: 16, uppercase: false) + " \(tuple.replacement) -> \(tuple.replacee)\n")
        }
    }

    static func writeJSON<Output: TextOutputStream>(_ image: MachOImage, tables: Set<InspectTable>, json: inout JSONStream,
                                                    to out: inout Output) throws(MachOError) {
        if tables.contains(.threadLocals) {
            json.member("thread_locals", .array(try descriptors(image).map { descriptor in
                .object([("address", .uint(descriptor.address)), ("variable", descriptor.variable.map(JSONValue.string) ?? .null),
                         ("offset", .uint(descriptor.offset)), ("thunk", .string(descriptor.thunk))])
            }), to: &out)
        }
        if tables.contains(.interpose) {
            json.member("interpose", .array(try tuples(image).map { tuple in
                .object([("address", .uint(tuple.address)), ("replacement", .string(tuple.replacement)), ("replacee", .string(tuple.replacee))])
            }), to: &out)
        }
    }
}
