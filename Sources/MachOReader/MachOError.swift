/// A failure to read a file's bytes: where it happened (the file, an absolute offset in it)
/// and what was wrong. Mach-O structures, code signatures, Objective-C metadata and app
/// archives all report their failures as one of these.
///
/// `offset` is an absolute offset in the file that was given to the reader (for a
/// slice of a universal file it already includes the slice's own offset), so a user
/// can look at the very byte with `xxd -s`.
package struct MachOError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What was wrong.
    package indirect enum Reason: Equatable, Sendable {
        /// A read of `needed` bytes ran past the end of the bounded region.
        case truncated(needed: Int, available: Int)
        /// The first bytes are not a Mach-O or universal magic.
        case badMagic(UInt32)
        /// The file holds no slice for the requested architecture.
        case noSuchArchitecture(String)
        /// A structure has a value that cannot be right.
        case malformed(String)
        /// A feature that is recognized but deliberately not supported.
        case unsupported(String)
        /// A code signature's `structure` (`SuperBlob`, `CodeDirectory (slot 0x1000)`, ...)
        /// that cannot be right: why (``malformed(_:)``), or the bounded read that failed in it.
        case codeSignature(structure: String, Reason)
        /// Objective-C metadata at runtime `address` (in image `image` of its address
        /// space, when the address lies in one) that cannot be right.
        case objCMetadata(image: Int?, address: UInt64, what: String)
        /// An `.ipa` whose zip structure is broken at the offset.
        case notZip(String)
        /// An archive entry that would not unpack safely or faithfully (a path escape, a
        /// symbolic link, an encrypted or unsupported entry), named as the archive spells it.
        case unsafeEntry(entry: String, what: String)
        /// An archive over a bound (entries, unpacked bytes, archive size).
        case overLimit(String)
        /// A file that cannot be read or written, or an app bundle without a usable executable.
        case unusable(String)

        /// The reason alone, as it follows the file and offset.
        var text: String {
            switch self {
            case let .truncated(needed, available): "truncated: needs \(needed) bytes, only \(available) available"
            // The bytes are not echoed: the file may be anything (a secret, a device).
            case .badMagic: "not a Mach-O file (no Mach-O or universal magic)"
            case let .noSuchArchitecture(arch): "no slice for architecture \(arch)"
            case let .malformed(what), let .overLimit(what), let .unusable(what): what
            case let .unsupported(what): "unsupported: \(what)"
            case let .codeSignature(structure, reason): "code signature: \(structure): \(reason.text)"
            case let .objCMetadata(_, address, what): "Objective-C metadata at \(hex(address)): \(what)"
            case let .notZip(what): "\(what) (re-export the .ipa)"
            case let .unsafeEntry(entry, what): "entry \(entry.debugDescription) \(what)"
            }
        }
    }

    /// Absolute file offset of the offending bytes.
    package var offset: Int
    /// What was wrong.
    package var reason: Reason
    /// The file the bytes came from, once known (the reader itself does no I/O).
    package var file: String?

    package init(offset: Int, _ reason: Reason, file: String? = nil) {
        self.offset = offset
        self.reason = reason
        self.file = file
    }

    /// Convenience for the most common case.
    package static func malformed(_ what: String, at offset: Int) -> MachOError {
        MachOError(offset: offset, .malformed(what))
    }

    /// A code signature's `structure` that cannot be right at `offset`.
    package init(offset: Int, structure: String, what: String) {
        self.init(offset: offset, .codeSignature(structure: structure, .malformed(what)))
    }

    /// A failed read inside code signature structure `structure`, at the read's own offset.
    package init(_ structure: String, wrapping cause: MachOError) {
        self.init(offset: cause.offset, .codeSignature(structure: structure, cause.reason), file: cause.file)
    }

    /// Objective-C metadata at `address` that cannot be right.
    package init(image: Int?, address: UInt64, what: String) {
        self.init(offset: 0, .objCMetadata(image: image, address: address, what: what))
    }

    /// The same error, attributed to `file`.
    package func inFile(_ file: String) -> MachOError {
        var copy = self
        copy.file = file
        return copy
    }

    /// The code signature structure and what was wrong in it, for a code signature's error.
    package var codeSignature: (structure: String, what: String)? {
        guard case let .codeSignature(structure, reason) = reason else { return nil }
        return (structure, reason.text)
    }

    /// Whether the error is an app archive's or bundle's (it names no offset in a Mach-O file).
    package var isArchive: Bool {
        switch reason {
        case .notZip, .unsafeEntry, .overLimit, .unusable: true
        default: false
        }
    }

    package var description: String {
        let file = file ?? "<bytes>"
        switch reason {
        case .objCMetadata: return reason.text
        case .notZip: return "\(file): not a readable zip archive at offset \(offset): \(reason.text)"
        case .unsafeEntry, .overLimit: return "\(file): \(reason.text); not unpacked (unpack it yourself and give the Payload/X.app directory)"
        case .unusable: return "\(file): \(reason.text)"
        default: return "\(file): offset \(hex(offset)): \(reason.text)"
        }
    }
}

/// Runs bounded reads of code signature structure `structure`, naming it in a failed read.
@inline(__always)
func reading<T>(_ structure: String, _ body: () throws(MachOError) -> T) throws(MachOError) -> T {
    do {
        return try body()
    } catch {
        throw MachOError(structure, wrapping: error)
    }
}

/// `0x` and lowercase hex digits: how messages and dumps print an address, offset or size.
package func hex<Value: BinaryInteger>(_ value: Value) -> String { "0x" + String(value, radix: 16) }

/// The names of the bits of `value` that `table` names, in the table's order, and the bits
/// it leaves unnamed: how dumps print a flags word.
package func namedBits<Value: FixedWidthInteger>(_ value: Value, _ table: [(Value, String)]) -> (names: [String], rest: Value) {
    let named = table.filter { value & $0.0 != 0 }
    return (named.map(\.1), named.reduce(value) { $0 & ~$1.0 })
}
