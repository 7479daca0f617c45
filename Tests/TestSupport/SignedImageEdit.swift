import Crypto

/// Edits a signed thin 64-bit Mach-O the way a user who changes an image and signs it
/// again ad hoc would: one byte of the header's padding (after the load commands, read by
/// nobody) changed, then every code slot hash of every CodeDirectory computed again over the
/// new bytes (what ld64.lld computed at link time: each page up to the code limit, the last
/// one short). The image stays validly signed, with another cdHash and the same size.
package enum SignedImageEdit {
    package struct Failure: Error, CustomStringConvertible {
        package let description: String
    }

    package static func changeUnusedByteAndResign(_ bytes: inout [UInt8]) throws {
        func little32(_ offset: Int) -> Int { (0..<4).reduce(0) { $0 | Int(bytes[offset + $1]) << (8 * $1) } }
        func big32(_ offset: Int) -> Int { (0..<4).reduce(0) { $0 << 8 | Int(bytes[offset + $1]) } }
        guard bytes.count > 32, little32(0) == 0xfeed_facf else { throw Failure(description: "not a thin 64-bit Mach-O") }
        let commandsSize = little32(20), commandCount = little32(16)
        bytes[32 + commandsSize + 8] ^= 0x5a
        var cursor = 32, signature: (offset: Int, size: Int)?
        for _ in 0..<commandCount {
            if little32(cursor) == 0x1d { signature = (little32(cursor + 8), little32(cursor + 12)) }
            cursor += little32(cursor + 4)
        }
        guard let signature, big32(signature.offset) == 0xfade_0cc0 else { throw Failure(description: "no embedded signature") }
        for index in 0..<big32(signature.offset + 8) {
            let entry = signature.offset + 12 + index * 8
            let type = big32(entry)
            guard type == 0 || (0x1000..<0x1005).contains(type) else { continue }
            let directory = signature.offset + big32(entry + 4)
            guard big32(directory) == 0xfade_0c02 else { throw Failure(description: "blob \(type) is not a CodeDirectory") }
            let hashOffset = big32(directory + 16), codeSlots = big32(directory + 28), codeLimit = big32(directory + 32)
            let hashSize = Int(bytes[directory + 36]), hashType = bytes[directory + 37], pageSize = 1 << Int(bytes[directory + 39])
            for slot in 0..<codeSlots {
                let page = bytes[(slot * pageSize)..<min((slot + 1) * pageSize, codeLimit)]
                let digest: [UInt8] = switch hashType {
                case 1: Array(Insecure.SHA1.hash(data: page))
                case 2, 3: Array(SHA256.hash(data: page))
                case 4: Array(SHA384.hash(data: page))
                default: throw Failure(description: "hash type \(hashType)")
                }
                let at = directory + hashOffset + slot * hashSize
                bytes.replaceSubrange(at..<(at + hashSize), with: digest.prefix(hashSize))
            }
        }
    }
}
