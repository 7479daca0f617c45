/// The architecture of a Mach-O image: `cputype` and `cpusubtype` from its header.
package struct CPUType: Equatable, Hashable, Sendable, CustomStringConvertible {
    package let type: Int32, subtype: Int32

    package init(type: Int32, subtype: Int32) { (self.type, self.subtype) = (type, subtype) }

    package static let abi64: Int32 = 0x0100_0000
    package static let x86Type: Int32 = 7
    package static let armType: Int32 = 12
    /// `CPU_SUBTYPE_MASK`: the capability bits of `cpusubtype`.
    package static let subtypeMask: Int32 = Int32(bitPattern: 0xff00_0000)

    package static let x86_64 = CPUType(type: x86Type | abi64, subtype: 3)
    package static let arm64 = CPUType(type: armType | abi64, subtype: 0)
    package static let arm64e = CPUType(type: armType | abi64, subtype: 2)

    /// The subtype without its capability bits.
    package var baseSubtype: Int32 { subtype & ~CPUType.subtypeMask }

    /// The architecture name used by `lipo`, `llvm-objdump --arch` and this tool.
    package var name: String {
        switch (type, baseSubtype) {
        case (CPUType.x86Type | CPUType.abi64, 8): return "x86_64h"
        case (CPUType.x86Type | CPUType.abi64, _): return "x86_64"
        case (CPUType.x86Type, _): return "i386"
        case (CPUType.armType | CPUType.abi64, 2): return "arm64e"
        case (CPUType.armType | CPUType.abi64, _): return "arm64"
        case (CPUType.armType, 9): return "armv7"
        case (CPUType.armType, 11): return "armv7s"
        case (CPUType.armType, _): return "arm"
        case (CPUType.armType | 0x0200_0000, _): return "arm64_32"
        default: return "cputype\(type)_\(baseSubtype)"
        }
    }

    package var description: String { name }

    /// Whether a user's `--arch` name selects this architecture.
    package func matches(_ archName: String) -> Bool { name == archName }
}
