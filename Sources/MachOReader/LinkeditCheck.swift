extension StructureCheck {
    /// Claims a table of `count` entries of `entrySize` bytes at the 32-bit `offset`
    /// read at `field` within the command.
    mutating func claimTable(
        _ site: LoadCommandSite, offsetField field: Int, count: UInt32, entrySize: UInt64,
        name: String, fields: (offset: String, size: String)
    ) throws(MachOError) {
        let offset = UInt64(try site.view.u32(field))
        try layout.claim(offset: offset, size: UInt64(count) * entrySize, name: name, fields: fields, at: site, fieldOffset: field)
    }

    /// LC_SYMTAB: exactly 24 bytes, once; the symbol and string tables inside the file.
    mutating func checkSymtab(_ site: LoadCommandSite) throws(MachOError) {
        try size(site, is: 24, once: "LC_SYMTAB")
        let table = try SymtabCommand(parsing: site.view)
        try claimTable(site, offsetField: 8, count: table.symbolCount, entrySize: 16, name: "symbol table", fields: ("symoff", "nsyms times 16"))
        try claimTable(site, offsetField: 16, count: table.stringSize, entrySize: 1, name: "string table", fields: ("stroff", "strsize"))
        symbolCount = table.symbolCount
    }

    /// LC_DYSYMTAB: exactly 80 bytes, once; its six tables inside the file.
    mutating func checkDysymtab(_ site: LoadCommandSite) throws(MachOError) {
        try size(site, is: 80, once: "LC_DYSYMTAB")
        let table = try DysymtabCommand(parsing: site.view)
        let names = DysymtabCommand.fieldNames
        for (word, entrySize, name) in [
            (6, 8, "table of contents"), (8, 56, "module table"), (10, 4, "reference table"), (12, 4, "indirect symbol table"),
            (14, 8, "external relocation table"), (16, 8, "local relocation table"),
        ] {
            try claimTable(site, offsetField: 8 + 4 * word, count: table.fields[word + 1], entrySize: UInt64(entrySize), name: name,
                           fields: (names[word], "\(names[word + 1]) times \(entrySize)"))
        }
        dysymtab = (site, table)
    }

    /// LC_DYLD_INFO(_ONLY): exactly 48 bytes, once; the rebase, bind, weak-bind, lazy-bind
    /// and export streams inside the file.
    mutating func checkDyldInfo(_ site: LoadCommandSite) throws(MachOError) {
        try size(site, is: 48, once: "LC_DYLD_INFO or LC_DYLD_INFO_ONLY")
        for (field, name) in [(8, "rebase"), (16, "bind"), (24, "weak_bind"), (32, "lazy_bind"), (40, "export")] {
            try claimTable(
                site, offsetField: field, count: try site.view.u32(field + 4), entrySize: 1,
                name: "dyld \(name.replacingUnderscores) info", fields: ("\(name)_off", "\(name)_size"))
        }
    }

    /// A `linkedit_data_command` (LC_CODE_SIGNATURE, LC_FUNCTION_STARTS, LC_DATA_IN_CODE,
    /// LC_DYLD_CHAINED_FIXUPS, LC_DYLD_EXPORTS_TRIE, ...): exactly 16 bytes, once per
    /// kind; its blob inside the file.
    mutating func checkLinkeditData(_ site: LoadCommandSite) throws(MachOError) {
        try size(site, is: 16, once: site.type.description)
        try claimTable(site, offsetField: 8, count: try site.view.u32(12), entrySize: 1, name: "\(site.type) data", fields: ("dataoff", "datasize"))
    }

    /// LC_NOTE: exactly 40 bytes; its 64-bit range inside the file.
    mutating func checkNote(_ site: LoadCommandSite) throws(MachOError) {
        try size(site, is: 40)
        try layout.claim(
            offset: try site.view.u64(24), size: try site.view.u64(32), name: "LC_NOTE data",
            fields: ("offset", "size"), at: site, fieldOffset: 24)
    }

    /// LC_TWOLEVEL_HINTS: exactly 16 bytes, once; its hints inside the file.
    mutating func checkTwoLevelHints(_ site: LoadCommandSite) throws(MachOError) {
        try size(site, is: 16)
        try once("LC_TWOLEVEL_HINTS", site)
        try claimTable(site, offsetField: 8, count: try site.view.u32(12), entrySize: 4, name: "two level hints", fields: ("offset", "nhints times 4"))
    }

    /// LC_ENCRYPTION_INFO(_64): its exact size, once; the encrypted range inside the file.
    mutating func checkEncryptionInfo(_ site: LoadCommandSite) throws(MachOError) {
        try size(site, is: site.type == .encryptionInfo ? 20 : 24)
        try once("LC_ENCRYPTION_INFO or LC_ENCRYPTION_INFO_64", site)
        try layout.checkInside(
            offset: UInt64(try site.view.u32(8)), size: UInt64(try site.view.u32(12)),
            fields: ("cryptoff", "cryptsize"), at: site, fieldOffset: 8)
    }

    /// LC_THREAD and LC_UNIXTHREAD: each (flavor, count) pair names a thread state this
    /// image's CPU has, with its exact count, and the state fits the command.
    mutating func checkThread(_ site: LoadCommandSite) throws(MachOError) {
        try size(site, atLeast: 8)
        if site.type == .unixThread { try once("LC_UNIXTHREAD", site) }
        // State words per flavor, as LLVM knows them, for the CPUs this reader supports.
        let counts: [UInt32: UInt32]
        switch header.cpu.type {
        case CPUType.x86Type | CPUType.abi64: counts = [4: 42, 6: 4, 7: 44, 8: 133, 9: 6]
        case CPUType.armType | CPUType.abi64: counts = [6: 68]
        default: throw site.error("thread states of cputype \(header.cpu.type) cannot be checked")
        }
        var offset = 8
        while offset < site.view.count {
            guard offset + 8 <= site.view.count else { throw site.error("flavor or count extends past the end of the command", field: offset) }
            let flavor = try site.view.u32(offset)
            let count = try site.view.u32(offset + 4)
            guard let expected = counts[flavor] else { throw site.error("unknown thread state flavor \(flavor)", field: offset) }
            guard count == expected else { throw site.error("thread state flavor \(flavor) has count \(count), not \(expected)", field: offset + 4) }
            offset += 8
            guard Int(count) * 4 <= site.view.count - offset else { throw site.error("thread state extends past the end of the command", field: offset) }
            offset += Int(count) * 4
        }
    }
}

extension DysymtabCommand {
    /// The local, defined external and undefined symbol ranges lie inside LC_SYMTAB's
    /// `symbolCount` symbols.
    func checkSymbolRanges(symbolCount: UInt32, at site: LoadCommandSite) throws(MachOError) {
        for word in [0, 2, 4] where fields[word + 1] != 0 {
            let (first, count) = (fields[word], fields[word + 1])
            guard UInt64(first) + UInt64(count) <= UInt64(symbolCount) else {
                throw site.error("\(Self.fieldNames[word]) \(first) plus \(Self.fieldNames[word + 1]) \(count) extends past the \(symbolCount) symbols of LC_SYMTAB", field: 8 + 4 * word)
            }
        }
    }
}

private extension String {
    var replacingUnderscores: String { split(separator: "_").joined(separator: " ") }
}
