/// A failure to read Mach-O bytes: where it happened and what was wrong.
///
/// `offset` is an absolute offset in the file that was given to the reader (for a
/// slice of a universal file it already includes the slice's own offset), so a user
/// can look at the very byte with `xxd -s`.
public struct MachOError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What was wrong.
    public enum Reason: Equatable, Sendable {
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
    }

    /// Absolute file offset of the offending bytes.
    public var offset: Int
    /// What was wrong.
    public var reason: Reason
    /// The file the bytes came from, once known (the reader itself does no I/O).
    public var file: String?

    public init(offset: Int, _ reason: Reason, file: String? = nil) {
        self.offset = offset
        self.reason = reason
        self.file = file
    }

    /// Convenience for the most common case.
    public static func malformed(_ what: String, at offset: Int) -> MachOError {
        MachOError(offset: offset, .malformed(what))
    }

    /// The same error, attributed to `file`.
    public func inFile(_ file: String) -> MachOError {
        var copy = self
        copy.file = file
        return copy
    }

    public var description: String {
        let place = "\(file ?? "<bytes>"): offset 0x\(String(offset, radix: 16))"
        switch reason {
        case let .truncated(needed, available):
            return "\(place): truncated: needs \(needed) bytes, only \(available) available"
        case .badMagic:
            // The bytes are not echoed: the file may be anything (a secret, a device).
            return "\(place): not a Mach-O file (no Mach-O or universal magic)"
        case let .noSuchArchitecture(arch):
            return "\(place): no slice for architecture \(arch)"
        case let .malformed(what):
            return "\(place): \(what)"
        case let .unsupported(what):
            return "\(place): unsupported: \(what)"
        }
    }
}
