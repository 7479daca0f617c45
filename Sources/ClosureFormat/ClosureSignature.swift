import Crypto
import Foundation

/// The private half of a closure-signing key pair (Ed25519): `install --sign KEY` signs each
/// closure it writes, header included, so a cache built in CI can be trusted where it lands
/// (`--trust PUBLIC_KEY`). Key files: ClosureCache's `ClosureKeyFiles.swift`.
package struct ClosureSigningKey {
    package static let label = "dyld3-closure-signing-key-v1"
    package let key: Curve25519.Signing.PrivateKey

    /// A new random key.
    package init() { key = Curve25519.Signing.PrivateKey() }

    /// The key whose raw representation is `raw` (32 bytes); nil for any other bytes.
    package init?(raw: Data) {
        guard let key = try? Curve25519.Signing.PrivateKey(rawRepresentation: raw) else { return nil }
        self.key = key
    }

    /// The key that verifies this key's signatures.
    package var trustKey: ClosureTrustKey { ClosureTrustKey(key: key.publicKey) }

    func signature(for bytes: ArraySlice<UInt8>) -> [UInt8] {
        // Ed25519 signing cannot fail for a valid key; an empty signature would be refused on read.
        (try? Array(key.signature(for: bytes))) ?? []
    }
}

/// The public key a launch, compare or verify trusts (`--trust PUBLIC_KEY`): only closures
/// signed by its private half are used.
package struct ClosureTrustKey {
    package static let label = "dyld3-closure-trust-key-v1"
    package let key: Curve25519.Signing.PublicKey

    init(key: Curve25519.Signing.PublicKey) { self.key = key }

    package init?(raw: Data) {
        guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: raw) else { return nil }
        self.key = key
    }

    func isValidSignature(_ signature: ArraySlice<UInt8>, for bytes: ArraySlice<UInt8>) -> Bool {
        key.isValidSignature(signature, for: bytes)
    }
}

extension ClosureTrustKey: Equatable {
    /// The same public key.
    package static func == (lhs: ClosureTrustKey, rhs: ClosureTrustKey) -> Bool {
        lhs.key.rawRepresentation == rhs.key.rawRepresentation
    }
}
