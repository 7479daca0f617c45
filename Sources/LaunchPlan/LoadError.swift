import MachOReader

/// Why a launch could not happen, worded so a user can act on it.
package enum LoadError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A non-weak dependency was found nowhere: the install name, who needed it, every path tried.
    case missingDylib(installName: String, neededBy: String, tried: [String])
    /// A non-weak import was not exported by the library it was expected in.
    case missingSymbol(symbol: String, importedBy: String, expectedIn: String)
    /// A file could not be parsed; the error names the file and the offset.
    case malformed(MachOError)
    /// A file has no slice for the launch's architecture.
    case wrongArchitecture(path: String, wanted: String, available: [String])
    /// A file exists but cannot be used (unreadable, wrong file type, ...).
    case unusable(path: String, reason: String)
    /// A file cannot be used because its closure (or the identity a closure records, or
    /// its fixup runs) is refused: that error, kept whole.
    indirect case failed(path: String, cause: ClosureError)
    /// A system call failed (the caller says what it was doing when that matters).
    case systemCall(SystemCallFailure)
    /// The operating system refused a mapping or protection change.
    case mapping(image: String, reason: String)
    /// A signed image whose signature does not hold: it never runs.
    case codeSignature(path: String, CodeSignatureFailure)
    /// An image the launch's ``SigningPolicy`` refuses: the rule and why.
    case signingPolicy(path: String, rule: SigningPolicy.Rule, why: String)

    package var description: String {
        switch self {
        case let .missingDylib(installName, neededBy, tried):
            return "library not loaded: \(installName)\n  referenced from: \(neededBy)\n  tried: "
                + (tried.isEmpty ? "(no candidate paths)" : tried.joined(separator: ", "))
        case let .missingSymbol(symbol, importedBy, expectedIn):
            return "symbol not found: \(symbol)\n  referenced from: \(importedBy)\n  expected in: \(expectedIn)"
        case let .malformed(error):
            // "FILE: offset 0x…: what", so every file error starts with the file's path.
            return "\(error) (malformed image)"
        case let .wrongArchitecture(path, wanted, available):
            return "\(path): no \(wanted) slice (has \(available.joined(separator: ", ")))"
        case let .unusable(path, reason):
            return "\(path): \(reason)"
        case let .failed(path, cause):
            return "\(path): \(cause)"
        case let .systemCall(failure):
            return "\(failure)"
        case let .mapping(image, reason):
            return "\(image): mapping failed: \(reason)"
        case let .codeSignature(path, failure):
            return "\(path): code signature invalid: \(failure)"
        case let .signingPolicy(path, rule, why):
            return "\(path): refused by \(rule.rawValue): \(why)"
        }
    }

    /// How a signed image's signature fails: the signature cannot be read, a page of the
    /// file does not match its hash, or a blob does not match its special slot.
    package enum CodeSignatureFailure: Equatable, Sendable, CustomStringConvertible {
        case unreadable(MachOError)
        /// `directory` names the CodeDirectory (its slot and hash type).
        case page(directory: String, page: Int, fileOffset: UInt64, size: Int)
        case specialSlot(directory: String, blob: String, what: String)
        /// Its CodeDirectory is no longer the one identified (another cdHash, or unreadable).
        case changed(recorded: CDHash, now: CDHash?)

        package var description: String {
            switch self {
            case let .unreadable(error): return "\(error)"
            case let .page(directory, page, fileOffset, size):
                return "\(directory): page \(page) (file offset \(hex(fileOffset)), \(size) bytes) does not match its hash"
            case let .specialSlot(directory, blob, what): return "\(directory): \(blob) blob \(what)"
            case let .changed(recorded, now):
                return "its CodeDirectory changed since the launch identified it (cdHash \(now.map(\.hex) ?? "unreadable"), recorded \(recorded.hex))"
            }
        }
    }
}
