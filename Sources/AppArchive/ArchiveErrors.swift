import MachOReader

/// An app bundle's or `.ipa` archive's failures, as ``MachOError``s naming the archive or
/// bundle: each prints as one line with what is wrong and what to do.
extension MachOError {
    /// The zip structure is broken at `offset`.
    package static func malformed(archive: String, offset: Int, what: String) -> MachOError {
        MachOError(offset: offset, .notZip(what), file: archive)
    }

    /// An entry that would not unpack safely or faithfully, named as the archive spells it.
    package static func unsafeEntry(archive: String, entry: String, what: String) -> MachOError {
        MachOError(offset: 0, .unsafeEntry(entry: entry, what: what), file: archive)
    }

    /// The archive exceeds a bound (entries, unpacked bytes, archive size).
    package static func limit(archive: String, what: String) -> MachOError {
        MachOError(offset: 0, .overLimit(what), file: archive)
    }

    /// A file that could not be read or written.
    package static func io(path: String, reason: String) -> MachOError {
        MachOError(offset: 0, .unusable(reason), file: path)
    }

    /// An app bundle without a usable executable, or an archive without exactly one app.
    package static func bundle(path: String, what: String) -> MachOError {
        MachOError(offset: 0, .unusable(what), file: path)
    }

    /// A work area that cannot be trusted or used: what is wrong and the fix.
    package static func workArea(path: String, what: String) -> MachOError {
        MachOError(offset: 0, .unusable(what), file: path)
    }
}

extension Result where Failure == UnsafeFileAt.Failure {
    /// The call's result, else an ``MachOError/io(path:reason:)`` at `path`: `what` failed,
    /// and `strerror`'s words for why.
    func get(path: String, _ what: String) throws(MachOError) -> Success {
        switch self {
        case let .success(value): return value
        case let .failure(failure): throw .io(path: path, reason: "\(what): \(UnsafeFileAt.describe(failure))")
        }
    }
}
