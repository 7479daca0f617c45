import ClosureFormat
import Crypto
import Foundation
import LoaderCore
import LaunchPlan
import LoaderSystem

extension ClosureSigningKey {
    /// Reads a signing key file (`dyld3-closure-signing-key-v1 <base64 of the 32-byte seed>`, mode 0600).
    package init(contentsOf path: String) throws(CommandFailure) {
        let raw = try ClosureKeyFile.read(path, label: Self.label, kind: .signing)
        guard let key = ClosureSigningKey(raw: raw) else { throw CommandFailure.key(path, "is not an Ed25519 private key") }
        self = key
    }

    /// Writes the key pair into `directory` as `closure-signing.key` (0600) and
    /// `closure-signing.pub` (0644), never overwriting either; both paths.
    package func write(into directory: String) throws(CommandFailure) -> (privateKey: String, publicKey: String) {
        let privatePath = directory + "/closure-signing.key", publicPath = directory + "/closure-signing.pub"
        for path in [privatePath, publicPath] where FileStatus.of(path) != nil {
            throw CommandFailure.key(path, "already exists: keys are never overwritten")
        }
        try ClosureKeyFile.write(key.rawRepresentation, label: Self.label, to: privatePath, mode: 0o600)
        try ClosureKeyFile.write(key.publicKey.rawRepresentation, label: ClosureTrustKey.label, to: publicPath, mode: 0o644)
        return (privatePath, publicPath)
    }
}

extension ClosureTrustKey {
    /// Reads a trust (public) key file (`dyld3-closure-trust-key-v1 <base64 of the 32-byte public key>`).
    package init(contentsOf path: String) throws(CommandFailure) {
        let raw = try ClosureKeyFile.read(path, label: Self.label, kind: .trust)
        guard let key = ClosureTrustKey(raw: raw) else { throw CommandFailure.key(path, "is not an Ed25519 public key") }
        self = key
    }
}

/// Who may own and write a key file, as ssh treats its keys: a private (signing) key must be
/// owned by the invoking user and neither readable nor writable by group or others; a trust
/// (public) key vouches for every closure it verifies, so it must be owned by the user or root
/// and not writable by group or others (StrictModes). Checked on the descriptor read from.
package enum ClosureKeyPolicy {
    /// Which half of a key pair a file holds.
    package enum Kind: Sendable {
        case signing, trust
    }

    /// Why a key file is refused: its owner, or its mode.
    package enum Problem: Equatable, Sendable, CustomStringConvertible {
        case owner(kind: Kind, owner: UInt32, user: UInt32)
        case privateKeyExposed(mode: UInt32)
        case trustKeyWritable(mode: UInt32)

        package var description: String {
            switch self {
            case let .owner(.signing, owner, user):
                "the private key is owned by uid \(owner), not by you (uid \(user)): use your own key"
            case let .owner(.trust, owner, user):
                "the trust key is owned by uid \(owner), not by you (uid \(user)) or root: whoever owns it chooses which closures are trusted"
            case let .privateKeyExposed(mode):
                "the private key is readable or writable by group or others (mode \(ClosureOwnership.octal(mode))): chmod 600 it, and treat it as leaked if others could read it"
            case let .trustKeyWritable(mode):
                "the trust key is writable by group or others (mode \(ClosureOwnership.octal(mode))): chmod go-w it"
            }
        }
    }

    /// Checks that user `user` may use a key of `kind` whose file has `status`.
    package static func check(_ status: FileStatus, kind: Kind, user: UInt32) -> Problem? {
        switch kind {
        case .signing:
            if status.ownerID != user { return .owner(kind: kind, owner: status.ownerID, user: user) }
            if status.mode & 0o077 != 0 { return .privateKeyExposed(mode: status.mode) }
        case .trust:
            if status.ownerID != user, status.ownerID != 0 { return .owner(kind: kind, owner: status.ownerID, user: user) }
            if status.mode & 0o022 != 0 { return .trustKeyWritable(mode: status.mode) }
        }
        return nil
    }
}

/// The one-line key file format.
enum ClosureKeyFile {
    static func read(_ path: String, label: String, kind: ClosureKeyPolicy.Kind) throws(CommandFailure) -> Data {
        let file: UnsafeFileIO.OpenFile
        switch UnsafeFileIO.openNoFollow(path) {
        case let .success(opened): file = opened
        case .failure(.missing): throw CommandFailure.key(path, "no such file")
        case let .failure(.untrusted(_, reason)): throw CommandFailure.key(path, reason)
        case let .failure(error): throw CommandFailure.key(path, "\(error)")
        }
        let refusal = ClosureKeyPolicy.check(file.status, kind: kind, user: UnsafeFileIO.effectiveUserID)
        let bytes = file.status.size < 4096 ? file.readAll() : nil
        let fields = bytes.map { String(decoding: $0, as: UTF8.self).split(whereSeparator: \.isWhitespace) } ?? []
        // The other half of the pair given where this half was meant: named as such, before
        // a refusal its mode would earn it (a .pub is 0644, which no private key may be).
        if fields.count == 2, let mixUp = mixUp(found: String(fields[0]), wanted: kind) {
            throw CommandFailure.key(path, mixUp)
        }
        if let refusal { throw CommandFailure.key(path, "refused: \(refusal)") }
        guard bytes != nil else {
            throw CommandFailure.key(path, "cannot be read as a key file")
        }
        guard fields.count == 2, fields[0] == label, let raw = Data(base64Encoded: String(fields[1])), raw.count == 32 else {
            throw CommandFailure.key(path, "is not a \(label) file")
        }
        return raw
    }

    /// What to say when a key file holds the other half of the pair than the one wanted.
    static func mixUp(found label: String, wanted kind: ClosureKeyPolicy.Kind) -> String? {
        switch kind {
        case .trust where label == ClosureSigningKey.label:
            "is the private signing key, not the package key: trusting takes the .pub file (--trust closure-signing.pub); the .key file is for --sign"
        case .signing where label == ClosureTrustKey.label:
            "is the trust (public) key, not the private signing key: signing takes the .key file (--sign closure-signing.key); the .pub file is for --trust"
        default:
            nil
        }
    }

    static func write(_ raw: Data, label: String, to path: String, mode: UInt32) throws(CommandFailure) {
        do throws(LoadError) {
            try UnsafeFileIO.writeAtomically(Array("\(label) \(raw.base64EncodedString())\n".utf8), to: path, mode: mode)
        } catch {
            throw .key(path, "\(error)")
        }
    }
}

extension CommandFailure {
    /// The key file at `path` cannot be read, parsed or written, for `why`.
    static func key(_ path: String, _ why: String) -> CommandFailure {
        CommandFailure(what: path, why: why, kind: "key")
    }
}
