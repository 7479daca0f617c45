/// One entry of a hand-built zip: its name's bytes, its data, its Unix mode and method,
/// the sizes its central-directory record claims (its real ones unless given) and its
/// CRC-32 (the data's unless given).
struct RawEntry {
    var name: [UInt8]
    var bytes: [UInt8] = [1]
    var mode: UInt32 = 0o100644
    var method: UInt16 = 0
    var compressed: UInt32?
    var unpacked: UInt32?
    var crc: UInt32?

    init(_ name: String, bytes: [UInt8] = [1], mode: UInt32 = 0o100644, method: UInt16 = 0, compressed: UInt32? = nil, unpacked: UInt32? = nil) {
        self.name = Array(name.utf8)
        (self.bytes, self.mode, self.method, self.compressed, self.unpacked) = (bytes, mode, method, compressed, unpacked)
    }
}

/// A zip of `entries` in two parts: the local headers with the data, and the central
/// directory with its end record, which expects to start `hole` bytes after the first part.
/// `version` is the "version needed to extract" every header gives.
func handBuiltZip(_ entries: [RawEntry], version: Int = 20, hole: Int = 0) -> (local: [UInt8], tail: [UInt8]) {
    func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xff), UInt8(v >> 8 & 0xff)] }
    func le32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8(v >> (8 * $0) & 0xff) } }
    var local: [UInt8] = [], central: [UInt8] = []
    for entry in entries {
        let crc = entry.crc ?? zipCRC32(entry.bytes), offset = UInt32(local.count)
        let compressed = entry.compressed ?? UInt32(entry.bytes.count), unpacked = entry.unpacked ?? UInt32(entry.bytes.count)
        local += le32(0x0403_4b50) + le16(version) + le16(0) + le16(Int(entry.method)) + le16(0) + le16(0) + le32(crc)
            + le32(compressed) + le32(unpacked) + le16(entry.name.count) + le16(0) + entry.name + entry.bytes
        central += le32(0x0201_4b50) + le16(3 << 8 | 20) + le16(version) + le16(0) + le16(Int(entry.method)) + le16(0) + le16(0) + le32(crc)
            + le32(compressed) + le32(unpacked) + le16(entry.name.count) + le16(0) + le16(0)
            + le16(0) + le16(0) + le32(entry.mode << 16) + le32(offset) + entry.name
    }
    let tail = central + le32(0x0605_4b50) + le16(0) + le16(0) + le16(entries.count) + le16(entries.count)
        + le32(UInt32(central.count)) + le32(UInt32(local.count + hole)) + le16(0)
    return (local, tail)
}

/// The zip CRC-32 (reflected, polynomial 0xedb88320) of `bytes`.
func zipCRC32(_ bytes: [UInt8]) -> UInt32 {
    var crc: UInt32 = 0xffff_ffff
    for byte in bytes {
        crc ^= UInt32(byte)
        for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xedb8_8320 : crc >> 1 }
    }
    return ~crc
}
