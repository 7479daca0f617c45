import ClosureFormat
import Crypto
import Foundation
import LoaderCore
import LaunchPlan

extension ClosureSigningKey {
    /// Reads a signing key file (`dyld3-closure-signing-key-v1 <base64 of the 32-byte seed>`, mode 0600).
    public init(contentsOf path: String) throws(ClosureKeyError) {
        let raw = try ClosureKeyFile.read(path, label: Self.label)
        guard let key = ClosureSigningKey(raw: raw) else { throw ClosureKeyError(path: path, what: "is not an Ed25519 private key") }
        self = key
    }

    /// Writes the key pair into `directory` as `closure-signing.key` (0600) and
    /// `closure-signing.pub` (0644); refuses to overwrite either. Returns both paths.
    public func write(into directory: String) throws(ClosureKeyError) -> (privateKey: String, publicKey: String) {
        let privatePath = directory + "/closure-signing.key", publicPath = directory + "/closure-signing.pub"
        for path in [privatePath, publicPath] where FileStatus.of(path) != nil {
            throw ClosureKeyError(path: path, what: "already exists: keys are never overwritten")
        }
        try ClosureKeyFile.write(key.rawRepresentation, label: Self.label, to: privatePath, mode: 0o600)
        try ClosureKeyFile.write(key.publicKey.rawRepresentation, label: ClosureTrustKey.label, to: publicPath, mode: 0o644)
        return (privatePath, publicPath)
    }
}

extension ClosureTrustKey {
    /// Reads a trust (public) key file (`dyld3-closure-trust-key-v1 <base64 of the 32-byte public key>`).
    public init(contentsOf path: String) throws(ClosureKeyError) {
        let raw = try ClosureKeyFile.read(path, label: Self.label)
        guard let key = ClosureTrustKey(raw: raw) else { throw ClosureKeyError(path: path, what: "is not an Ed25519 public key") }
        self = key
    }
}

/// A key file that cannot be read, parsed or written.
public struct ClosureKeyError: Error, CustomStringConvertible, Sendable {
    public let path: String
    /// The system call that failed, when one did.
    public let failure: SystemCallFailure?
    private let reason: String

    init(path: String, what: String) {
        self.path = path
        failure = nil
        reason = what
    }

    init(path: String, failure: SystemCallFailure) {
        self.path = path
        self.failure = failure
        reason = failure.description
    }

    /// What is wrong with the key file.
    public var what: String { reason }
    public var description: String { "\(path): \(what)" }
}

/// The one-line key file format.
enum ClosureKeyFile {
    static func read(_ path: String, label: String) throws(ClosureKeyError) -> Data {
        guard case let .success(file) = UnsafeFileIO.openNoFollow(path), file.status.size < 4096, let bytes = file.readAll() else {
            throw ClosureKeyError(path: path, what: "cannot be read as a key file")
        }
        let fields = String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isWhitespace)
        guard fields.count == 2, fields[0] == label, let raw = Data(base64Encoded: String(fields[1])), raw.count == 32 else {
            throw ClosureKeyError(path: path, what: "is not a \(label) file")
        }
        return raw
    }

    static func write(_ raw: Data, label: String, to path: String, mode: UInt32) throws(ClosureKeyError) {
        do throws(SystemCallFailure) {
            try UnsafeFileIO.writeAtomically(Array("\(label) \(raw.base64EncodedString())\n".utf8), to: path, mode: mode)
        } catch {
            throw ClosureKeyError(path: path, failure: error)
        }
    }
}
