import MachOReader
import LaunchPlan

/// A segment's mapping plan as a closure record.
///
/// Encoding: `name` string, `vmOffset` `vmSize` `fileOffset` `fileSize` ULEB, protection
/// byte (VM_PROT bits), read-only-after-fixups byte.
extension SegmentPlan {
    /// Reads one segment and checks it lies inside its image (`imageVMSize`) and its file
    /// (`fileSize`); errors name `imagePath` and the segment's offset in the body.
    init(parsing r: inout ClosureReader, imagePath: String, imageVMSize: UInt64, fileSize: UInt64) throws(ClosureError) {
        let start = r.position
        let name = try r.string()
        self.init(
            name: name, vmOffset: try r.uleb(), vmSize: try r.uleb(), fileOffset: try r.uleb(), fileSize: try r.uleb(),
            protection: VMProtection(rawValue: Int32(try r.u8() & 7)), readOnlyAfterFixups: try r.u8() != 0)
        guard vmOffset <= imageVMSize, vmSize <= imageVMSize - vmOffset, self.fileSize <= vmSize,
              fileOffset <= fileSize, self.fileSize <= fileSize - fileOffset else {
            throw r.corrupt("segment \(name) of \(imagePath) lies outside its image or file", at: start)
        }
    }

    func encode(into w: inout ClosureWriter) {
        w.string(name)
        for value in [vmOffset, vmSize, fileOffset, fileSize] { w.uleb(value) }
        w.u8(UInt8(truncatingIfNeeded: protection.rawValue))
        w.u8(readOnlyAfterFixups ? 1 : 0)
    }

    /// The smallest encoding of a segment, for bounding counts against the bytes left.
    static let minimumEncodedSize = 7

    /// Whether this segment shares address space with `other`.
    func overlaps(_ other: SegmentPlan) -> Bool {
        vmSize > 0 && other.vmSize > 0 && vmOffset < other.vmOffset &+ other.vmSize && other.vmOffset < vmOffset &+ vmSize
    }

    /// Whether `offset` (from the image's base) lies in this segment.
    func contains(_ offset: UInt64) -> Bool { offset >= vmOffset && offset - vmOffset < vmSize }
}

extension ImagePlan {
    /// Whether `offset` (from the image's base) lies in a segment the plan maps executable.
    func isExecutable(_ offset: UInt64) -> Bool {
        segments.contains { $0.protection.contains(.execute) && $0.contains(offset) }
    }
}
