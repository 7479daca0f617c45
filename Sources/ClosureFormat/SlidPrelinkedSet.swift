import LaunchPlan
import MachOReader

/// A prelinked set slid for this boot (docs/prelinked.md): a copy of a set's data with every
/// slide location stored for one base chosen at random once per boot, as the dyld shared cache
/// is slid once per boot. A launch that finds it maps it at that base and stores nothing.
///
/// The file: an 88-byte header, the protection runs, zeros up to the data offset (a multiple
/// of ``PrelinkedSet/dataAlignment``), the data. The protection runs, computed from the set's
/// plans, let a launch protect the copy while it decodes the set on its other core; it checks
/// them against the plans before anything runs.
///
///     0  magic "DYLD3PB\0"
///     8  checksum: xxh3-64 of bytes 16 to the end of the protection runs
///    16  format version (u32)       20  flags (u32, 0)
///    24  the set's header checksum (its metadata: which set this is a copy of)
///    32  the set's data hash (its data)
///    40  base: the address the data is slid to (the range's start)
///    48  boot id (16 bytes: /proc/sys/kernel/random/boot_id)
///    64  data hash: xxh3-64 of this file's data
///    72  data offset                80  protection run count
///    88  protection runs: start, size (offsets in the range), protection (bit 0 read,
///        bit 1 write, bit 2 execute), a u64 each
package struct SlidPrelinkedSetHeader: Equatable, Sendable {
    package static let magic: [UInt8] = Array("DYLD3PB\u{0}".utf8)
    package static let size = 88
    package static let runSize = 24
    package static let formatVersion: UInt32 = 1

    /// One run of pages of one protection, from the range's start.
    package struct ProtectionRun: Equatable, Sendable {
        package let range: Range<UInt64>
        package let protection: VMProtection

        package init(range: Range<UInt64>, protection: VMProtection) {
            (self.range, self.protection) = (range, protection)
        }
    }

    package let setChecksum: UInt64
    package let setDataHash: UInt64
    package let base: UInt64
    package let bootID: [UInt8]
    package let dataHash: UInt64
    package let dataOffset: UInt64
    package let protections: [ProtectionRun]

    package init(setChecksum: UInt64, setDataHash: UInt64, base: UInt64, bootID: [UInt8], dataHash: UInt64, protections: [ProtectionRun]) {
        (self.setChecksum, self.setDataHash, self.base, self.bootID, self.dataHash) = (setChecksum, setDataHash, base, bootID, dataHash)
        self.protections = protections
        let alignment = PrelinkedSet.dataAlignment
        dataOffset = (UInt64(Self.size + protections.count * Self.runSize) + alignment - 1) / alignment * alignment
    }

    /// The header and protection runs' size the first ``size`` bytes declare, unchecked and
    /// bounded by `limit`: how much a reader reads before it checks.
    package static func declaredSize(_ fields: [UInt8], limit: Int) -> Int {
        guard fields.count >= size else { return size }
        let count = fields.littleEndianWord(80)
        return size + Int(min(count, UInt64(max(0, limit - size) / runSize))) * runSize
    }

    /// Reads and checks the header and its protection runs (`bytes`: the file's first bytes,
    /// at least ``declaredSize(_:limit:)``): magic, checksum, version, the data's extent
    /// against `fileSize` for a range of `rangeSize` bytes, each run page-aligned (`pageSize`),
    /// inside the range, after the one before, never writable and executable.
    package init(parsing bytes: [UInt8], fileSize: UInt64, rangeSize: UInt64, pageSize: UInt64, path: String) throws(ClosureError) {
        guard bytes.count >= Self.size else {
            throw .corrupt(path: path, offset: bytes.count, what: "\(bytes.count) bytes is shorter than the \(Self.size)-byte header of a slid set")
        }
        guard Array(bytes[0..<8]) == Self.magic else { throw .corrupt(path: path, offset: 0, what: "not a slid prelinked set (bad magic)") }
        let word = bytes.littleEndianWord
        let (checksum, version, flags) = bytes.checksumVersionAndFlags
        let count = word(80)
        guard count <= rangeSize / pageSize, bytes.count >= Self.size + Int(count) * Self.runSize else {
            throw .corrupt(path: path, offset: 80, what: "\(count) protection runs do not fit the file or the range")
        }
        let end = Self.size + Int(count) * Self.runSize
        guard UnsafeHash.xxh3(bytes[16..<end]) == checksum else { throw .corrupt(path: path, offset: 8, what: "checksum mismatch") }
        guard version == Self.formatVersion else {
            throw .incompatible(path: path, what: "slid set format version \(version), this loader reads \(Self.formatVersion)")
        }
        guard flags == 0 else { throw .corrupt(path: path, offset: 20, what: "unknown flags") }
        dataOffset = word(72)
        guard dataOffset >= UInt64(end), dataOffset % PrelinkedSet.dataAlignment == 0, dataOffset <= fileSize, fileSize - dataOffset == rangeSize else {
            throw .corrupt(path: path, offset: 72, what: "data at offset \(dataOffset) of a \(fileSize)-byte file does not hold the set's \(rangeSize)-byte range "
                + "(truncated or damaged)")
        }
        var runs: [ProtectionRun] = []
        var cursor: UInt64 = 0
        for index in 0..<Int(count) {
            let at = Self.size + index * Self.runSize
            let (start, size, bits) = (word(at), word(at + 8), word(at + 16))
            guard start >= cursor, start % pageSize == 0, size > 0, size % pageSize == 0, start <= rangeSize, size <= rangeSize - start,
                  bits & ~7 == 0, bits & 6 != 6 else {
                throw .corrupt(path: path, offset: at, what: "protection run \(index) (+\(hex(start)), \(size) bytes, \(bits)) "
                    + "is not whole pages inside the range after the run before, or is writable and executable")
            }
            runs.append(ProtectionRun(range: start..<(start + size), protection: VMProtection(rawValue: Int32(bits))))
            cursor = start + size
        }
        protections = runs
        setChecksum = word(24)
        setDataHash = word(32)
        base = word(40)
        bootID = Array(bytes[48..<64])
        dataHash = word(64)
    }

    /// The header and protection runs' bytes, the checksum computed.
    package var bytes: [UInt8] {
        var w = ClosureWriter()
        for field in [UInt64(Self.formatVersion), setChecksum, setDataHash, base] { w.u64(field) }
        w.raw(bootID[...])
        for field in [dataHash, dataOffset, UInt64(protections.count)] { w.u64(field) }
        for run in protections {
            for field in [run.range.lowerBound, UInt64(run.range.count), UInt64(run.protection.rawValue)] { w.u64(field) }
        }
        return w.checksummed(magic: Self.magic)
    }
}

extension PrelinkedSet {
    /// A copy of the set's `data` with every slide location's target stored for a range at
    /// `newBase`. The slide runs must have been checked (``checkSlideRuns(path:)``).
    package func slid(_ data: ByteView, to newBase: UInt64, path: String) throws(ClosureError) -> [UInt8] {
        guard data.count == Int(rangeSize), var bytes = try? data.bytes(0, data.count) else {
            throw .corrupt(path: path, offset: 0, what: "\(data.count) bytes of data for a \(rangeSize)-byte range")
        }
        let size = rangeSize
        do throws(FixupFault) {
            try FixupRunWalk(slideRuns).forEachRebase(imageSize: size) { location, target throws(FixupFault) in
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
