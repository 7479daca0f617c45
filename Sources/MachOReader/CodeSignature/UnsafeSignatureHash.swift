import Crypto

// The signature's hashes, computed by swift-crypto over bytes read in place: nothing is
// copied and nothing allocated. Every range handed in here has been bounds-checked by the
// ByteView it came from, or comes from the caller's own buffer.

extension CSHashType {
    /// Calls `body` with the digest of `data` under this hash type (the full digest; a
    /// truncated type's caller reads only the first `hashSize` bytes).
    @inline(__always)
    func withDigest<R>(of data: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        @inline(__always) func digest<Hasher: HashFunction>(_ hasher: Hasher) -> R {
            var hasher = hasher
            unsafe hasher.update(bufferPointer: data)
            return unsafe hasher.finalize().withUnsafeBytes { unsafe body($0) }
        }
        switch self {
        case .sha1: return digest(Insecure.SHA1())
        case .sha256, .sha256Truncated: return digest(SHA256())
        case .sha384: return digest(SHA384())
        }
    }

    /// Whether the digest of `data` begins with the `expected.count` bytes of `expected`
    /// (at most the digest's size).
    func digest(of data: UnsafeRawBufferPointer, matches expected: ByteView) -> Bool {
        unsafe expected.withUnsafeBytes { wanted in
            unsafe withDigest(of: data) { digest in
                guard wanted.count <= digest.count else { return false }
                for index in 0..<wanted.count where unsafe digest[index] != wanted[index] { return false }
                return true
            }
        }
    }

    /// Whether the digest of the window's bytes begins with `expected`.
    func digest(of data: ByteView, matches expected: ByteView) -> Bool {
        unsafe data.withUnsafeBytes { unsafe digest(of: $0, matches: expected) }
    }

    /// The digest of the window's bytes, truncated to a cdHash's 20 bytes (a CodeDirectory
    /// blob's bytes give its cdHash).
    package func cdHash(of data: ByteView) -> CDHash {
        unsafe data.withUnsafeBytes { bytes in unsafe withDigest(of: bytes) { unsafe CDHash(bytes: [UInt8]($0.prefix(CS_CDHASH_LEN)))! } }
    }

    /// The full digest of the window's bytes (for printing a special slot's expected value).
    func digestBytes(of data: ByteView) -> [UInt8] {
        unsafe data.withUnsafeBytes { bytes in unsafe withDigest(of: bytes) { unsafe Array($0.prefix(hashSize)) } }
    }
}

extension CS_CodeDirectory {
    /// Whether `page`, bytes the caller holds (a page being filled, a mapped page), hashes
    /// to code slot `slot`. The bytes must be the whole page as the signature covers it:
    /// ``pageRange(_:)`` bytes of the image, the last page short. Allocates nothing; a slot
    /// out of range never matches.
    package func verifyPage(unsafeBytes page: UnsafeRawBufferPointer, slot: Int) -> Bool {
        guard let expected = codeSlotHash(slot) else { return false }
        return unsafe hashType.digest(of: page, matches: expected)
    }
}
