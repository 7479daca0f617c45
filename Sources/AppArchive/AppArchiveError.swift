/// Why an app bundle or an `.ipa` archive cannot be used. Every case prints as one line
/// naming the archive or bundle, the entry or offset, what is wrong and what to do.
package enum AppArchiveError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The zip structure is broken at `offset`.
    case malformed(archive: String, offset: Int, what: String)
    /// An entry that would not unpack safely or faithfully (a path escape, a symbolic link,
    /// an encrypted or unsupported entry), named as the archive spells it.
    case unsafeEntry(archive: String, entry: String, what: String)
    /// The archive exceeds a bound (entries, unpacked bytes, archive size).
    case limit(archive: String, what: String)
    /// A file could not be read or written.
    case io(path: String, reason: String)
    /// An app bundle without a usable executable, or an archive without exactly one app.
    case bundle(path: String, what: String)

    package var description: String {
        switch self {
        case let .malformed(archive, offset, what):
            return "\(archive): not a readable zip archive at offset \(offset): \(what) (re-export the .ipa)"
        case let .unsafeEntry(archive, entry, what):
            return "\(archive): entry \(entry.debugDescription) \(what); not unpacked (unpack it yourself and give the Payload/X.app directory)"
        case let .limit(archive, what):
            return "\(archive): \(what); not unpacked (unpack it yourself and give the Payload/X.app directory)"
        case let .io(path, reason):
            return "\(path): \(reason)"
        case let .bundle(path, what):
            return "\(path): \(what)"
        }
    }
}
