import MachOReader

/// How a closure's mapping plan for an image differs from the plan the image's own header
/// and load commands give (the first difference found). The `description` is what a launch
/// or `verify` reports after the image's path.
package enum PlanDisagreement: Equatable, Sendable, CustomStringConvertible {
    /// The plan maps no readable file bytes at the image's base, where the header lies.
    case noHeaderSegment
    /// The plan maps none of the header's bytes from the file.
    case headerNotMapped
    /// The load commands (`size` bytes with the header) do not fit in the header segment.
    case loadCommandsDoNotFit(size: Int, segment: String)
    /// The header or load commands do not parse.
    case unparsable(MachOError)
    /// The header is for another architecture than the closure.
    case architecture(image: String, closure: String)
    /// The load commands map no segment at the image's base.
    case nothingMappedAtBase
    /// The load commands parse but give no mapping plan.
    case noPlan(LoadError)
    /// The closure maps the image at another base or size than its load commands.
    case extent(closureBase: UInt64, closureSize: UInt64, imageBase: UInt64, imageSize: UInt64)
    /// The closure maps another number of segments than the load commands.
    case segmentCount(closure: Int, image: Int)
    /// The first segment the closure maps differently from the load commands.
    case segment(closure: SegmentPlan, image: SegmentPlan)

    package var description: String {
        switch self {
        case .noHeaderSegment:
            "the plan maps no readable file bytes at the image's base, where its header lies"
        case .headerNotMapped:
            "its header is not mapped"
        case let .loadCommandsDoNotFit(size, segment):
            "its load commands (\(size) bytes) do not fit in \(segment)"
        case let .unparsable(error):
            "its header does not parse: \(error)"
        case let .architecture(image, closure):
            "its header is for \(image), the closure is for \(closure)"
        case .nothingMappedAtBase:
            "its load commands map nothing at its base"
        case let .noPlan(error):
            "its load commands give no plan: \(error)"
        case let .extent(closureBase, closureSize, imageBase, imageSize):
            "the closure maps it at base \(hex(closureBase)) size \(hex(closureSize)), "
                + "its load commands at \(hex(imageBase)) size \(hex(imageSize))"
        case let .segmentCount(closure, image):
            "the closure maps \(closure) segments, its load commands \(image)"
        case let .segment(closure, image):
            "segment \(closure.name): the closure says \(Self.describe(closure)), the image's load commands say \(Self.describe(image))"
        }
    }

    private static func describe(_ segment: SegmentPlan) -> String {
        "\(segment.name) \(segment.protection)\(segment.readOnlyAfterFixups ? " read-only after fixups" : "") "
            + "vm +\(hex(segment.vmOffset)) size \(hex(segment.vmSize)) "
            + "file \(hex(segment.fileOffset)) size \(hex(segment.fileSize))"
    }
}
