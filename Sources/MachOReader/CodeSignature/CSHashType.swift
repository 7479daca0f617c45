/// A CodeDirectory's hash type (`kSecCodeSignatureHash*`): how its pages, special slots and
/// its own cdHash are hashed.
package enum CSHashType: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    case sha1 = 1            // kSecCodeSignatureHashSHA1
    case sha256 = 2          // kSecCodeSignatureHashSHA256
    case sha256Truncated = 3 // kSecCodeSignatureHashSHA256Truncated
    case sha384 = 4          // kSecCodeSignatureHashSHA384

    /// The size of a slot's hash (`hashSize`) for this type.
    package var hashSize: Int { [20, 32, 20, 48][Int(rawValue) - 1] }
    /// How strong the type is: the kernel takes the cdHash of the strongest CodeDirectory.
    package var rank: Int { [1, 3, 2, 4][Int(rawValue) - 1] }
    package var description: String { ["SHA-1", "SHA-256", "SHA-256 (truncated)", "SHA-384"][Int(rawValue) - 1] }
}

/// The 20 bytes that identify a CodeDirectory: its hash, under its own hash type, truncated
/// (`CS_CDHASH_LEN`). Held inline: making, comparing and passing one allocates nothing.
package struct CDHash: Hashable, Sendable, CustomStringConvertible {
    package let high: UInt64, middle: UInt64, low: UInt32

    package init(high: UInt64, middle: UInt64, low: UInt32) { (self.high, self.middle, self.low) = (high, middle, low) }

    /// The hash from its 20 bytes (nil for any other length). Concrete, not generic: a
    /// closure's decode reads one per image, and a generic walk costs the Swift runtime's
    /// first instantiation of its iterator types in every fresh process.
    package init?(bytes: [UInt8]) {
        guard bytes.count == CS_CDHASH_LEN else { return nil }
        var high: UInt64 = 0, middle: UInt64 = 0, low: UInt32 = 0
        for index in 0..<8 { high = high << 8 | UInt64(bytes[index]) }
        for index in 8..<16 { middle = middle << 8 | UInt64(bytes[index]) }
        for index in 16..<CS_CDHASH_LEN { low = low << 8 | UInt32(bytes[index]) }
        self.init(high: high, middle: middle, low: low)
    }

    /// The hash from 40 hex digits.
    package init?(hex: String) {
        let digits = hex.compactMap(\.hexDigitValue)
        guard digits.count == hex.count, digits.count % 2 == 0 else { return nil }
        self.init(bytes: stride(from: 0, to: digits.count, by: 2).map { UInt8(digits[$0] << 4 | digits[$0 + 1]) })
    }

    /// The 20 bytes, in order.
    package var bytes: [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: high >> (56 - 8 * $0)) }
            + (0..<8).map { UInt8(truncatingIfNeeded: middle >> (56 - 8 * $0)) }
            + (0..<4).map { UInt8(truncatingIfNeeded: low >> (24 - 8 * $0)) }
    }

    /// 40 lowercase hex digits, as `codesign -d -v` prints it.
    package var hex: String { bytes.map { String($0 >> 4, radix: 16) + String($0 & 0xf, radix: 16) }.joined() }

    package var description: String { hex }
}
