import LoaderCore
import MachOReader
import LaunchPlan
import ClosureFormat
import LoaderSystem

/// The image decides protections: a closure's mapping plan for an image must be exactly the
/// plan the image's own header and load commands give (the slow path's derivation,
/// `ImagePlan(segments:...)`), so protections, file ranges, writable and executable segments
/// come from the image, never from the closure alone. The header and load commands are read
/// through the descriptor the launch maps from, before anything is written or run.
extension ClosureImage {
    /// The segment that holds the image's header and load commands as the plan maps them: the
    /// readable, file-backed segment at the image's base (nil: nothing can be checked, refused).
    var headerSegment: SegmentPlan? {
        plan.segments.first { $0.vmOffset == 0 && $0.fileSize >= UInt64(MachHeader.size) && $0.protection.contains(.read) }
    }

    /// Whether `commands` (the header and load commands) give exactly this plan, checked field
    /// by field on the bytes with `ImagePlan(segments:...)`'s rules: no parse, no allocation.
    func planMatches(arch: String, commands: ArraySlice<UInt8>, text: SegmentPlan) -> Bool {
        guard Self.word32(commands, 0) == MachHeader.magic64,
              CPUType(type: Int32(bitPattern: Self.word32(commands, 4)), subtype: Int32(bitPattern: Self.word32(commands, 8))).matches(arch) else {
            return false
        }
        let count = Int(Self.word32(commands, 16))
        var offset = MachHeader.size
        var mapped = 0, end: UInt64 = 0
        var sliceOffset: UInt64 = 0
        let base = plan.preferredBase
        for _ in 0..<count {
            guard offset + 8 <= commands.count else { return false }
            let size = Int(Self.word32(commands, offset + 4))
            guard size >= 8, offset + size <= commands.count else { return false }
            if Self.word32(commands, offset) == LoadCommandType.segment64.rawValue {
                guard size >= Segment.commandSize else { return false }
                let vmAddress = Self.word64(commands, offset + 24), vmSize = Self.word64(commands, offset + 32)
                let fileOffset = Self.word64(commands, offset + 40), fileSize = Self.word64(commands, offset + 48)
                let protection = VMProtection(rawValue: Int32(bitPattern: Self.word32(commands, offset + 60)))
                let flags = Self.word32(commands, offset + 68)
                if Segment.isMapped(initialProtection: protection, fileSize: fileSize, vmSize: vmSize) {
                    guard mapped < plan.segments.count, vmAddress >= base else { return false }
                    let claimed = plan.segments[mapped]
                    mapped += 1
                    // The segment at the base comes first in every real image and fixes the
                    // slice's offset in the file; any other order goes to the full derivation.
                    if mapped == 1 {
                        guard vmAddress == base, text.fileOffset >= fileOffset else { return false }
                        sliceOffset = text.fileOffset - fileOffset
                    }
                    let sliceSize = identity.size >= sliceOffset ? identity.size - sliceOffset : 0
                    let (top, overflow) = vmAddress.addingReportingOverflow(vmSize)
                    guard !overflow, vmAddress - base == claimed.vmOffset, vmSize == claimed.vmSize, fileSize == claimed.fileSize,
                          fileSize <= vmSize, protection.rawValue & 7 == claimed.protection.rawValue & 7,
                          fileOffset <= sliceSize, fileSize <= sliceSize - fileOffset, claimed.fileOffset == sliceOffset &+ fileOffset,
                          Self.nameMatches(commands, offset + 8, claimed.name),
                          SegmentPlan.isReadOnlyAfterFixups(isDataConst: claimed.name == "__DATA_CONST", flags: flags) == claimed.readOnlyAfterFixups
                    else { return false }
                    end = max(end, top - base)
                }
            }
            offset += size
        }
        return mapped == plan.segments.count && end == plan.vmSize
    }

    /// Why this image's plan is not the one its own load commands give for `arch` (nil when they
    /// agree), read from `file`, the descriptor the launch maps from, at the plan's own file
    /// offsets. The common case is one `pread` of the header segment's first page, checked in
    /// place; longer load commands or a disagreement go through the full derivation.
    package func planDisagreement(arch: String, file: ImageDescriptor) -> PlanDisagreement? {
        if let text = headerSegment {
            let first = file.read(offset: text.fileOffset, count: Int(min(text.fileSize, Self.headerReadSize)))
            if first.count >= MachHeader.size {
                let size = MachHeader.size + Int(Self.word32(first[...], 20))
                if size <= first.count, planMatches(arch: arch, commands: first[..<size], text: text) { return nil }
            }
        }
        return derivedPlanDisagreement(arch: arch) { offset, count in
            guard let segment = plan.segments.first(where: { offset >= $0.vmOffset && offset - $0.vmOffset < $0.fileSize }),
                  UInt64(count) <= segment.fileSize - (offset - segment.vmOffset) else { return nil }
            let bytes = file.read(offset: segment.fileOffset + (offset - segment.vmOffset), count: count)
            return bytes.count == count ? bytes : nil
        }
    }

    /// One page holds the header and load commands of nearly every image.
    static let headerReadSize: UInt64 = 4096

    /// The little-endian 32- and 64-bit words at `offset` of `bytes` (a slice starting at 0, `offset` in range).
    static func word32(_ bytes: ArraySlice<UInt8>, _ offset: Int) -> UInt32 {
        UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16 | UInt32(bytes[offset + 3]) << 24
    }

    static func word64(_ bytes: ArraySlice<UInt8>, _ offset: Int) -> UInt64 {
        UInt64(word32(bytes, offset)) | UInt64(word32(bytes, offset + 4)) << 32
    }

    /// Whether the 16-byte, NUL-padded segment name at `offset` is `name`.
    static func nameMatches(_ bytes: ArraySlice<UInt8>, _ offset: Int, _ name: String) -> Bool {
        var index = 0
        for byte in name.utf8 {
            guard index < 16, bytes[offset + index] == byte else { return false }
            index += 1
        }
        while index < 16 {
            guard bytes[offset + index] == 0 else { return false }
            index += 1
        }
        return true
    }

    /// The plan's disagreement with the one `ImagePlan(segments:...)` derives from the image's
    /// parsed load commands (nil when they agree).
    func derivedPlanDisagreement(arch: String, read: (_ vmOffset: UInt64, _ count: Int) -> [UInt8]?) -> PlanDisagreement? {
        guard let text = headerSegment else { return .noHeaderSegment }
        let table: SegmentTable
        do throws(MachOError) {
            guard let first = read(0, MachHeader.size) else { return .headerNotMapped }
            let size = try SegmentTable.requiredSize(header: ByteView(first))
            guard UInt64(size) <= text.fileSize, let bytes = read(0, size) else {
                return .loadCommandsDoNotFit(size: size, segment: text.name)
            }
            table = try SegmentTable(parsing: ByteView(bytes))
        } catch {
            return .unparsable(error)
        }
        guard table.header.cpu.name == arch else { return .architecture(image: table.header.cpu.name, closure: arch) }
        // The slice starts where the segment at the image's base says its file offset 0 is.
        guard let baseSegment = table.segments.filter({ Segment.isMapped(initialProtection: $0.initialProtection, fileSize: $0.fileSize, vmSize: $0.vmSize) })
            .min(by: { $0.vmAddress < $1.vmAddress }), text.fileOffset >= baseSegment.fileOffset else {
            return .nothingMappedAtBase
        }
        let sliceOffset = text.fileOffset - baseSegment.fileOffset
        let derived: ImagePlan
        do throws(LoadError) {
            derived = try ImagePlan(segments: table.segments, path: path, sliceOffset: sliceOffset,
                                    sliceSize: identity.size >= sliceOffset ? identity.size - sliceOffset : 0)
        } catch {
            return .noPlan(error)
        }
        if derived.preferredBase != plan.preferredBase || derived.vmSize != plan.vmSize {
            return .extent(closureBase: plan.preferredBase, closureSize: plan.vmSize, imageBase: derived.preferredBase, imageSize: derived.vmSize)
        }
        guard derived.segments.count == plan.segments.count else {
            return .segmentCount(closure: plan.segments.count, image: derived.segments.count)
        }
        for (claimed, actual) in zip(plan.segments, derived.segments) where claimed != actual {
            return .segment(closure: claimed, image: actual)
        }
        return nil
    }
}

