/// One symbol an image exports: a terminal of its export trie.
///
/// The terminal's export info is a ULEB128 `flags` word followed by what the flags call
/// for: a re-export's library ordinal and imported name, a stub-and-resolver pair, or the
/// symbol's offset from the image's mach header.
package struct ExportedSymbol: Equatable, Sendable {
    /// `EXPORT_SYMBOL_FLAGS_KIND_MASK`: what the symbol's value is.
    package enum Kind: UInt8, Equatable, Sendable {
        /// `EXPORT_SYMBOL_FLAGS_KIND_REGULAR`: code or data in the image.
        case regular = 0
        /// `EXPORT_SYMBOL_FLAGS_KIND_THREAD_LOCAL`: a thread-local variable's descriptor.
        case threadLocal = 1
        /// `EXPORT_SYMBOL_FLAGS_KIND_ABSOLUTE`: a constant value, not an address in the image.
        case absolute = 2
    }

    /// Where the symbol's definition is, a re-export's imported name as a string.
    package typealias Definition = ExportDefinition<String>

    /// `EXPORT_SYMBOL_FLAGS_KIND_MASK`, `_WEAK_DEFINITION`, `_REEXPORT` and `_STUB_AND_RESOLVER`.
    package static let kindMask: UInt64 = 0x03, weakDefinitionFlag: UInt64 = 0x04, reexportFlag: UInt64 = 0x08, stubAndResolverFlag: UInt64 = 0x10
    /// `EXPORT_SYMBOL_FLAGS_STATIC_RESOLVER` in older `mach-o/loader.h` (no payload, never
    /// read by dyld); current dyld gives the bit to `EXPORT_SYMBOL_FLAGS_FUNCTION_VARIANT`.
    package static let staticResolverFlag: UInt64 = 0x20

    /// The symbol's name (the trie's edge labels, concatenated).
    package let name: String
    /// The raw flags word.
    package let flags: UInt64, definition: Definition
    /// Offset of the symbol's terminal node from the start of the trie.
    package let nodeOffset: Int

    package var kind: Kind { Kind(rawValue: UInt8(flags & Self.kindMask)) ?? .regular }
    /// `EXPORT_SYMBOL_FLAGS_WEAK_DEFINITION`.
    package var isWeakDefinition: Bool { flags & Self.weakDefinitionFlag != 0 }
    /// `EXPORT_SYMBOL_FLAGS_REEXPORT`.
    package var isReexport: Bool { flags & Self.reexportFlag != 0 }
    /// See ``ExportDefinition/imageOffset``.
    package var imageOffset: UInt64? { definition.imageOffset }
}

extension ExportedSymbol {
    /// Decodes a terminal's export info; `info` spans exactly the terminal's bytes.
    package init(name: String, parsing info: ByteView, nodeOffset: Int) throws(MachOError) {
        try self.init(name: name, terminal: try ExportTerminal(parsing: info, nodeOffset: nodeOffset, name: name), in: info)
    }

    /// The symbol named `name` whose terminal is `terminal`, found in `trie`.
    package init(name: String, terminal: ExportTerminal, in trie: ByteView) throws(MachOError) {
        let definition: Definition = switch terminal.definition {
        case let .image(offset): .image(offset: offset)
        case let .stubAndResolver(stub, resolver): .stubAndResolver(stubOffset: stub, resolverOffset: resolver)
        case let .functionVariant(defaultOffset, index): .functionVariant(defaultOffset: defaultOffset, tableIndex: index)
        case let .reexport(ordinal, range):
            .reexport(libraryOrdinal: ordinal, importedName: try terminal.importedName(range, in: trie).string)
        }
        self.init(name: name, flags: terminal.flags, definition: definition, nodeOffset: terminal.nodeOffset)
    }
}

/// A terminal's export info decoded in place, a re-export's imported name left where it
/// is in the file: what a loader's lookup by name needs, with no string made and nothing
/// to retain (``ExportedSymbol`` is the same information with names).
package struct ExportTerminal: Sendable {
    /// Where the symbol's definition is, a re-export's imported name as the absolute file
    /// offsets of its bytes (see ``importedName(_:in:)``), empty when it is the symbol's own name.
    package typealias Definition = ExportDefinition<Range<Int>>

    /// The raw flags word.
    package let flags: UInt64, definition: Definition
    /// Offset of the terminal node from the start of the trie.
    package let nodeOffset: Int

    package var kind: ExportedSymbol.Kind { ExportedSymbol.Kind(rawValue: UInt8(flags & ExportedSymbol.kindMask)) ?? .regular }
    /// `EXPORT_SYMBOL_FLAGS_WEAK_DEFINITION`.
    package var isWeakDefinition: Bool { flags & ExportedSymbol.weakDefinitionFlag != 0 }

    /// See ``ExportDefinition/imageOffset``.
    package var imageOffset: UInt64? { definition.imageOffset }

    /// A re-export's imported name: the bytes at `range` of `view` (the trie, or any window
    /// of the file that holds them).
    package func importedName(_ range: Range<Int>, in view: ByteView) throws(MachOError) -> ByteView {
        try view.slice(range.lowerBound - view.base, range.count)
    }
}

extension ExportTerminal {
    /// Decodes the export info `info` (exactly the terminal's bytes); `name` is called only
    /// to word an error.
    package init(parsing info: ByteView, nodeOffset: Int, name: @autoclosure () -> String) throws(MachOError) {
        var cursor = ByteCursor(info)
        let flags = try cursor.uleb128()
        guard flags & ExportedSymbol.kindMask != ExportedSymbol.kindMask else {
            throw MachOError.malformed("export \(name()) has unknown symbol kind 3 (flags \(hex(flags)))", at: info.base)
        }
        let definition: Definition
        if flags & ExportedSymbol.reexportFlag != 0 {
            let ordinalOffset = cursor.absoluteOffset
            let ordinal = try cursor.uleb128()
            guard ordinal <= UInt64(Int32.max) else {
                throw MachOError.malformed("re-export \(name()) names library ordinal \(ordinal)", at: ordinalOffset)
            }
            let importedName = try cursor.cStringBytes()
            definition = .reexport(libraryOrdinal: Int(ordinal), importedName: importedName.base..<importedName.base + importedName.count)
        } else {
            let offset = try cursor.uleb128()
            if flags & ExportedSymbol.stubAndResolverFlag != 0 {
                definition = .stubAndResolver(stubOffset: offset, resolverOffset: try cursor.uleb128())
            } else if flags & ExportedSymbol.staticResolverFlag != 0, !cursor.atEnd {
                definition = .functionVariant(defaultOffset: offset, tableIndex: try cursor.uleb128())
            } else {
                definition = .image(offset: offset)
            }
        }
        guard cursor.atEnd else {
            throw MachOError.malformed(
                "export info of \(name()) is \(info.count) bytes but its fields end after \(cursor.position)",
                at: cursor.absoluteOffset)
        }
        self.init(flags: flags, definition: definition, nodeOffset: nodeOffset)
    }
}

/// Where an exported symbol's definition is; a re-export's imported name is an `ImportedName`.
package enum ExportDefinition<ImportedName: Equatable & Sendable>: Equatable, Sendable {
    /// In this image, `offset` bytes from its mach header (for an absolute symbol, the
    /// value itself).
    case image(offset: UInt64)
    /// `EXPORT_SYMBOL_FLAGS_STUB_AND_RESOLVER`: `stubOffset` is what the static linker
    /// bound clients to; dyld calls the resolver at `resolverOffset` for the real address.
    case stubAndResolver(stubOffset: UInt64, resolverOffset: UInt64)
    /// Flag 0x20 followed by a table index: current dyld's
    /// `EXPORT_SYMBOL_FLAGS_FUNCTION_VARIANT`, whose address is chosen at load time from
    /// entry `tableIndex` of LC_FUNCTION_VARIANTS, `defaultOffset` being the fallback.
    case functionVariant(defaultOffset: UInt64, tableIndex: UInt64)
    /// `EXPORT_SYMBOL_FLAGS_REEXPORT`: defined by the dylib with `libraryOrdinal`
    /// (1-based, in the image's dependency order) under `importedName`, which is empty
    /// when it is the symbol's own name.
    case reexport(libraryOrdinal: Int, importedName: ImportedName)

    /// The symbol's offset from the image's mach header (its stub for a stub-and-resolver,
    /// its default for a function variant, its value when absolute); nil for a re-export.
    package var imageOffset: UInt64? {
        switch self {
        case let .image(offset): offset
        case let .stubAndResolver(stubOffset, _): stubOffset
        case let .functionVariant(defaultOffset, _): defaultOffset
        case .reexport: nil
        }
    }
}
