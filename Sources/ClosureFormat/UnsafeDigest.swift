import Crypto
import MachOReader

/// SHA-256 through swift-crypto over a window's bytes in place (a mapped file is not copied).
package enum UnsafeDigest {
    package static let sha256Size = SHA256.byteCount

    package static func sha256(_ view: ByteView) -> [UInt8] {
        unsafe view.withUnsafeBytes { bytes in
            var hasher = SHA256()
            unsafe hasher.update(bufferPointer: bytes)
            return Array(hasher.finalize())
        }
    }

    package static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        Array(SHA256.hash(data: bytes))
    }
}
