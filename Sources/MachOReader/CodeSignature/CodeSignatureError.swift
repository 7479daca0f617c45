/// A code signature that cannot be right: where its bad bytes are (an absolute file offset,
/// like ``MachOError``'s), which structure they belong to, what was wrong, and the reader's
/// error underneath when a bounded read failed.
public struct CodeSignatureError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Absolute file offset of the offending bytes.
    public var offset: Int
    /// The structure being read: `SuperBlob`, `CodeDirectory (slot 0x1000)`, `Requirements`, ...
    public var structure: String
    /// What was wrong.
    public var what: String
    /// The failed read that led here, if one did.
    public var cause: MachOError?
    /// The file the bytes came from, once known.
    public var file: String?

    public init(offset: Int, structure: String, what: String, cause: MachOError? = nil, file: String? = nil) {
        self.offset = offset
        self.structure = structure
        self.what = what
        self.cause = cause
        self.file = file
    }

    /// A failed read inside `structure`, at the read's own offset.
    public init(_ structure: String, wrapping cause: MachOError) {
        self.init(offset: cause.offset, structure: structure, what: cause.reason.text, cause: cause, file: cause.file)
    }

    /// The same error, attributed to `file`.
    public func inFile(_ file: String) -> CodeSignatureError {
        var copy = self
        copy.file = file
        return copy
    }

    public var description: String {
        "\(file ?? "<bytes>"): offset 0x\(String(offset, radix: 16)): code signature: \(structure): \(what)"
    }

    /// The error as the rest of the reader reports one (for tables that throw ``MachOError``).
    public var machOError: MachOError {
        MachOError(offset: offset, .malformed("code signature: \(structure): \(what)"), file: file)
    }
}

extension MachOError.Reason {
    /// The reason alone, without the file and offset ``MachOError/description`` puts first.
    var text: String {
        switch self {
        case let .truncated(needed, available): "truncated: needs \(needed) bytes, only \(available) available"
        case .badMagic: "not a Mach-O file"
        case let .noSuchArchitecture(arch): "no slice for architecture \(arch)"
        case let .malformed(what): what
        case let .unsupported(what): "unsupported: \(what)"
        }
    }
}

/// Runs bounded reads of `structure`, turning a failed read into a ``CodeSignatureError``.
@inline(__always)
func reading<T>(_ structure: String, _ body: () throws(MachOError) -> T) throws(CodeSignatureError) -> T {
    do {
        return try body()
    } catch {
        throw CodeSignatureError(structure, wrapping: error)
    }
}
