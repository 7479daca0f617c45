import MachOReader
import LaunchPlan

/// Finds an image's initializers, the one way both launch paths do: `__init_offsets`
/// entries as they are, and each `__mod_init_func` slot through the rebase that fixes it
/// up (a slot that is not rebased into its own image is refused).
public enum Initializers {
    /// The image's initializer functions as offsets from its preferred base, in section
    /// order. `rebasedTarget` gives the target offset of the rebase that stays at a slot
    /// (a vmOffset), or nil when the slot is not rebased into the image.
    public static func offsets(
        of image: MachOImage, plan: ImagePlan, rebasedTarget: (UInt64) throws(LoadError) -> UInt64?
    ) throws(LoadError) -> [UInt64] {
        var offsets: [UInt64] = []
        for section in image.initializerSections {
            if section.type == Section.typeModInitFuncPointers {
                let first = section.address &- plan.preferredBase
                for slot in stride(from: UInt64(0), to: section.size / 8 * 8, by: 8) {
                    guard let target = try rebasedTarget(first &+ slot) else {
                        throw .unusable(path: plan.path, reason: "initializer slot at offset 0x\(String(first &+ slot, radix: 16)) is not rebased into the image")
                    }
                    offsets.append(target)
                }
            } else {
                do {
                    offsets += try image.initializerOffsets(in: section).map(UInt64.init)
                } catch {
                    throw .malformed(error.inFile(plan.path))
                }
            }
        }
        return offsets
    }
}
