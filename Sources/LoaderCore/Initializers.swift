import MachOReader
import LaunchPlan

/// An image's initializers, found the one way both launch paths do: `__init_offsets` entries
/// as they are, each `__mod_init_func` slot through its rebase (one not into its own image is refused).
package enum Initializers {
    /// Offsets from the preferred base, in section order. `rebasedTarget`: the target offset
    /// of the rebase at a slot, or nil when it is not rebased into the image.
    package static func offsets(
        of image: MachOImage, plan: ImagePlan, rebasedTarget: (UInt64) throws(LoadError) -> UInt64?
    ) throws(LoadError) -> [UInt64] {
        var offsets: [UInt64] = []
        for section in image.initializerSections {
            if section.type == Section.typeModInitFuncPointers {
                let first = section.address &- plan.preferredBase
                for slot in stride(from: UInt64(0), to: section.size / 8 * 8, by: 8) {
                    guard let target = try rebasedTarget(first &+ slot) else {
                        throw .unusable(path: plan.path, reason: "initializer slot at offset \(hex(first &+ slot)) is not rebased into the image")
                    }
                    offsets.append(target)
                }
            } else {
                offsets += try LoadError.reading(plan.path) { () throws(MachOError) in
                    try image.initializerOffsets(in: section).map(UInt64.init)
                }
            }
        }
        return offsets
    }
}
