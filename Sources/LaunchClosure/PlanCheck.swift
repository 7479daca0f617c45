import LoaderCore
import MachOReader

/// The image decides protections: a closure's mapping plan for an image must be exactly the
/// plan the image's own header and load commands give (the same derivation the slow path
/// uses, `ImagePlan(segments:...)`), so segment protections, file ranges, which segments
/// may receive fixups and which are executable come from the image, never from the closure
/// alone. The header and load commands are read from the image's mapped `__TEXT` at launch,
/// from the file by `verify`: no fixup parsing, no symbol work.
extension ClosureImage {
    /// The file offset and size of the bytes that hold the image's header and load
    /// commands as the plan maps them: the readable, file-backed segment at the image's base.
    /// nil when the plan maps no such segment (then nothing can be checked: refused).
    var headerSegment: SegmentPlan? {
        plan.segments.first { $0.vmOffset == 0 && $0.fileSize >= UInt64(MachHeader.size) && $0.protection.contains(.read) }
    }

    /// Why this image's plan is not the one its own load commands give for `arch`, or nil
    /// when they agree. `read(offset, count)` returns the image's bytes at `offset` from its
    /// base (nil when they are not mapped from the file).
    public func planDisagreement(arch: String, read: (_ vmOffset: UInt64, _ count: Int) -> [UInt8]?) -> String? {
        guard let text = headerSegment else { return "the plan maps no readable file bytes at the image's base, where its header lies" }
        let table: SegmentTable
        do throws(MachOError) {
            guard let first = read(0, MachHeader.size) else { return "its header is not mapped" }
            let size = try SegmentTable.requiredSize(header: ByteView(first))
            guard UInt64(size) <= text.fileSize, let bytes = read(0, size) else {
                return "its load commands (\(size) bytes) do not fit in \(text.name)"
            }
            table = try SegmentTable(parsing: ByteView(bytes))
        } catch {
            return "its header does not parse: \(error)"
        }
        guard table.header.cpu.name == arch else { return "its header is for \(table.header.cpu.name), the closure is for \(arch)" }
        // The slice starts where the segment at the image's base says its file offset 0 is.
        guard let baseSegment = table.segments.filter({ $0.vmSize > 0 && !($0.initialProtection.isEmpty && $0.fileSize == 0) })
            .min(by: { $0.vmAddress < $1.vmAddress }), text.fileOffset >= baseSegment.fileOffset else {
            return "its load commands map nothing at its base"
        }
        let sliceOffset = text.fileOffset - baseSegment.fileOffset
        let derived: ImagePlan
        do {
            derived = try ImagePlan(segments: table.segments, path: path, sliceOffset: sliceOffset,
                                    sliceSize: identity.size >= sliceOffset ? identity.size - sliceOffset : 0)
        } catch {
            return "its load commands give no plan: \(error)"
        }
        if derived.preferredBase != plan.preferredBase || derived.vmSize != plan.vmSize {
            return "the closure maps it at base 0x\(String(plan.preferredBase, radix: 16)) size 0x\(String(plan.vmSize, radix: 16)), "
                + "its load commands at 0x\(String(derived.preferredBase, radix: 16)) size 0x\(String(derived.vmSize, radix: 16))"
        }
        guard derived.segments.count == plan.segments.count else {
            return "the closure maps \(plan.segments.count) segments, its load commands \(derived.segments.count)"
        }
        for (claimed, actual) in zip(plan.segments, derived.segments) where claimed != actual {
            return "segment \(claimed.name): the closure says \(Self.describe(claimed)), the image's load commands say \(Self.describe(actual))"
        }
        return nil
    }

    private static func describe(_ segment: SegmentPlan) -> String {
        "\(segment.name) \(segment.protection)\(segment.readOnlyAfterFixups ? " read-only after fixups" : "") "
            + "vm +0x\(String(segment.vmOffset, radix: 16)) size 0x\(String(segment.vmSize, radix: 16)) "
            + "file 0x\(String(segment.fileOffset, radix: 16)) size 0x\(String(segment.fileSize, radix: 16))"
    }
}
