import LaunchPlan
import MachOReader

/// A prelinked set slid for this boot: a copy of a set's data with every slide location
/// already stored for one base address, chosen at random once per boot, as the dyld shared
/// cache is slid once per boot and then mapped by every process as it lies. A launch that
/// finds the copy for the running boot, for its set, maps it at that base and stores
/// nothing: no slide location is written, no page is dirtied. docs/prelinked.md.
///
/// The file: a 72-byte header, zeros up to ``PrelinkedSet/dataAlignment``, the data (the
/// set's range size).
///
///     0  magic "DYLD3PB\0"
///     8  checksum: xxh3-64 of bytes 16 to 72
///    16  format version (u32)       20  flags (u32, 0)
///    24  the set's header checksum (its metadata: which set this is a copy of)
///    32  the set's data hash (its data)
///    40  base: the address the data is slid to (the range's start)
///    48  boot id (16 bytes: /proc/sys/kernel/random/boot_id)
///    64  data hash: xxh3-64 of this file's data
public struct SlidPrelinkedSetHeader: Equatable, Sendable {
    public static let magic: [UInt8] = Array("DYLD3PB\u{0}".utf8)
    public static let size = 72
    public static let formatVersion: UInt32 = 1

    public let setChecksum: UInt64
    public let setDataHash: UInt64
    public let base: UInt64
    public let bootID: [UInt8]
    public let dataHash: UInt64

    public init(setChecksum: UInt64, setDataHash: UInt64, base: UInt64, bootID: [UInt8], dataHash: UInt64) {
        self.setChecksum = setChecksum
        self.setDataHash = setDataHash
        self.base = base
        self.bootID = bootID
        self.dataHash = dataHash
    }

    /// Where the data starts.
    public static var dataOffset: UInt64 { PrelinkedSet.dataAlignment }

    /// Reads and checks the header (magic, checksum, version, extent against `fileSize` for
    /// a range of `rangeSize` bytes).
    public init(parsing fields: [UInt8], fileSize: UInt64, rangeSize: UInt64, path: String) throws(ClosureError) {
        guard fields.count >= Self.size else {
            throw .corrupt(path: path, offset: fields.count, what: "\(fields.count) bytes is shorter than the \(Self.size)-byte header of a slid set")
        }
        guard Array(fields[0..<8]) == Self.magic else { throw .corrupt(path: path, offset: 0, what: "not a slid prelinked set (bad magic)") }
        func word(_ offset: Int) -> UInt64 {
            (0..<8).reversed().reduce(UInt64(0)) { $0 << 8 | UInt64(fields[offset + $1]) }
        }
        guard UnsafeHash.xxh3(fields[16..<Self.size]) == word(8) else { throw .corrupt(path: path, offset: 8, what: "checksum mismatch") }
        let version = UInt32(truncatingIfNeeded: word(16))
        guard version == Self.formatVersion else {
            throw .incompatible(path: path, what: "slid set format version \(version), this loader reads \(Self.formatVersion)")
        }
        guard word(16) >> 32 == 0 else { throw .corrupt(path: path, offset: 20, what: "unknown flags") }
        guard fileSize >= Self.dataOffset, fileSize - Self.dataOffset == rangeSize else {
            throw .corrupt(path: path, offset: 0, what: "\(fileSize) bytes do not hold the set's \(rangeSize)-byte range after the header (truncated or damaged)")
        }
        setChecksum = word(24)
        setDataHash = word(32)
        base = word(40)
        bootID = Array(fields[48..<64])
        dataHash = word(64)
    }

    /// The header's bytes, its checksum computed.
    public var bytes: [UInt8] {
        var w = ClosureWriter()
        w.u64(0)
        w.u64(UInt64(Self.formatVersion))
        w.u64(setChecksum)
        w.u64(setDataHash)
        w.u64(base)
        var file = Self.magic + w.bytes + bootID
        var tail = ClosureWriter()
        tail.u64(dataHash)
        file += tail.bytes
        let checksum = UnsafeHash.xxh3(file[16...])
        for index in 0..<8 { file[8 + index] = UInt8(truncatingIfNeeded: checksum >> (8 * UInt64(index))) }
        return file
    }
}

extension PrelinkedSet {
    /// The set's data slid to `base` (the range starting there): every slide location's
    /// target stored for it, over a copy of `data` (the set's data, for its own base). The
    /// slide runs must have been checked (``checkSlideRuns(path:)``).
    public func slid(_ data: ByteView, to newBase: UInt64, path: String) throws(ClosureError) -> [UInt8] {
        guard data.count == Int(rangeSize), var bytes = try? data.bytes(0, data.count) else {
            throw .corrupt(path: path, offset: 0, what: "\(data.count) bytes of data for a \(rangeSize)-byte range")
        }
        let size = rangeSize
        do throws(FixupFault) {
            try FixupRunWalk(slideRuns).forEachRebase { location, target throws(FixupFault) in
                guard location <= size - 8 else { throw .runOutsideSegments(start: location, last: location) }
                let value = target.value(imageBase: newBase)
                for byte in 0..<8 { bytes[Int(location) + byte] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(byte))) }
            }
        } catch {
            throw .fixups(path: path, image: "the prelinked range", stream: .rebases, fault: error)
        }
        return bytes
    }
}
