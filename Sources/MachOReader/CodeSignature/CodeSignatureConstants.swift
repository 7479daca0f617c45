// The embedded code signature's constants, under the names Apple's headers give them
// (xnu's cs_blobs.h, the Security framework's CSCommon.h). Every field of a signature is
// big-endian.

/// An embedded signature: the SuperBlob `LC_CODE_SIGNATURE` points at.
package let CSMAGIC_EMBEDDED_SIGNATURE: UInt32 = 0xfade_0cc0
/// The embedded signature of old (10.5-era) tools.
package let CSMAGIC_EMBEDDED_SIGNATURE_OLD: UInt32 = 0xfade_0b02
/// One requirement (an expression in the requirement language, compiled).
package let CSMAGIC_REQUIREMENT: UInt32 = 0xfade_0c00
/// The requirement set: a SuperBlob-like index of requirements by type.
package let CSMAGIC_REQUIREMENTS: UInt32 = 0xfade_0c01
/// A CodeDirectory: the hashes of the code pages and of the other blobs.
package let CSMAGIC_CODEDIRECTORY: UInt32 = 0xfade_0c02
/// Entitlements as an XML property list.
package let CSMAGIC_EMBEDDED_ENTITLEMENTS: UInt32 = 0xfade_7171
/// Entitlements as DER.
package let CSMAGIC_EMBEDDED_DER_ENTITLEMENTS: UInt32 = 0xfade_7172
/// A wrapper around foreign data: the CMS signature.
package let CSMAGIC_BLOBWRAPPER: UInt32 = 0xfade_0b01

/// SuperBlob slot types (`CS_BlobIndex.type`); slots 1 to 11 are also the CodeDirectory's
/// special slots, hashed at `hashOffset - slot * hashSize`.
package let CSSLOT_CODEDIRECTORY: UInt32 = 0, CSSLOT_REQUIREMENTS: UInt32 = 2, CSSLOT_ENTITLEMENTS: UInt32 = 5
package let CSSLOT_DER_ENTITLEMENTS: UInt32 = 7, CSSLOT_LAUNCH_CONSTRAINT_SELF: UInt32 = 8, CSSLOT_LAUNCH_CONSTRAINT_PARENT: UInt32 = 9
package let CSSLOT_LAUNCH_CONSTRAINT_RESPONSIBLE: UInt32 = 10, CSSLOT_LIBRARY_CONSTRAINT: UInt32 = 11
/// The first alternate CodeDirectory (one per further hash type).
package let CSSLOT_ALTERNATE_CODEDIRECTORIES: UInt32 = 0x1000
package let CSSLOT_ALTERNATE_CODEDIRECTORY_MAX: UInt32 = 5
package let CSSLOT_ALTERNATE_CODEDIRECTORY_LIMIT: UInt32 = CSSLOT_ALTERNATE_CODEDIRECTORIES + CSSLOT_ALTERNATE_CODEDIRECTORY_MAX
/// The CMS signature (a blob wrapper; empty in an ad-hoc signature).
package let CSSLOT_SIGNATURESLOT: UInt32 = 0x10000

/// CodeDirectory versions: the first version that has each group of fields.
package let CS_SUPPORTSNONE: UInt32 = 0x20001, CS_SUPPORTSSCATTER: UInt32 = 0x20100, CS_SUPPORTSTEAMID: UInt32 = 0x20200
package let CS_SUPPORTSCODELIMIT64: UInt32 = 0x20300, CS_SUPPORTSEXECSEG: UInt32 = 0x20400, CS_SUPPORTSRUNTIME: UInt32 = 0x20500
package let CS_SUPPORTSLINKAGE: UInt32 = 0x20600

/// A cdHash is the CodeDirectory's hash truncated to this many bytes.
package let CS_CDHASH_LEN = 20

/// CodeDirectory flags (`CS_CodeDirectory.flags`), also the process's code-signing flags.
package let CS_ADHOC: UInt32 = 0x2, CS_RUNTIME: UInt32 = 0x10000, CS_LINKER_SIGNED: UInt32 = 0x20000

/// Executable-segment flags (`CS_CodeDirectory.execSegFlags`).
package let CS_EXECSEG_MAIN_BINARY: UInt64 = 0x1

/// `kSecDesignatedRequirementType`: the type of a requirement set's designated requirement
/// (`CS_Requirements`; types run from 1, host, to 5, plugin).
package let kSecDesignatedRequirementType: UInt32 = 3

/// Names for the flags and slots, for printing.
package enum CodeSignatureNames {
    /// The `CS_*` flags of `cs_blobs.h`, by bit.
    static let flags: [(UInt32, String)] = [
        (0x1, "valid"), (CS_ADHOC, "adhoc"), (0x4, "get-task-allow"), (0x8, "installer"),
        (0x10, "forced-lv"), (0x20, "invalid-allowed"), (0x100, "hard"), (0x200, "kill"),
        (0x400, "check-expiration"), (0x800, "restrict"), (0x1000, "enforcement"),
        (0x2000, "library-validation"), (0x4000, "entitlements-validated"),
        (0x8000, "nvram-unrestricted"), (CS_RUNTIME, "runtime"), (CS_LINKER_SIGNED, "linker-signed"),
    ]
    /// The `CS_EXECSEG_*` flags, by bit.
    static let execSegFlags: [(UInt64, String)] = [
        (CS_EXECSEG_MAIN_BINARY, "main-binary"), (0x10, "allow-unsigned"), (0x20, "debugger"), (0x40, "jit"),
        (0x80, "skip-lv"), (0x100, "can-load-cdhash"), (0x200, "can-exec-cdhash"),
    ]

    /// `adhoc,linker-signed`, with any unnamed bits as hex; `none` for 0.
    package static func flagNames(_ flags: UInt32) -> String { names(flags, Self.flags) }

    package static func execSegFlagNames(_ flags: UInt64) -> String { names(flags, execSegFlags) }

    static func names<Value: FixedWidthInteger>(_ value: Value, _ table: [(Value, String)]) -> String {
        let (names, rest) = namedBits(value, table)
        let parts = names + (rest != 0 ? [hex(rest)] : [])
        return parts.isEmpty ? "none" : parts.joined(separator: ",")
    }

    /// SuperBlob slot types (`CSSLOT_*`) by name, the alternate CodeDirectories aside.
    static let slotNames: [UInt32: String] = [
        0: "CodeDirectory", 1: "Info.plist", 2: "Requirements", 3: "Resources", 4: "Application", 5: "Entitlements",
        7: "DER entitlements", 8: "Launch constraint (self)", 9: "Launch constraint (parent)",
        10: "Launch constraint (responsible)", 11: "Library constraint",
        0x10000: "CMS signature", 0x10001: "Identification", 0x10002: "Ticket",
    ]

    /// The name of a SuperBlob slot type.
    package static func slotName(_ type: UInt32) -> String {
        if let name = slotNames[type] { return name }
        guard (CSSLOT_ALTERNATE_CODEDIRECTORIES..<CSSLOT_ALTERNATE_CODEDIRECTORY_LIMIT).contains(type) else { return "slot \(hex(type))" }
        return "Alternate CodeDirectory \(type - CSSLOT_ALTERNATE_CODEDIRECTORIES)"
    }

    /// The name of a requirement type.
    package static func requirementTypeName(_ type: UInt32) -> String {
        (1...5).contains(type)
            ? ["host", "guest", "designated", "library", "plugin"][Int(type) - 1] : "type \(type)"
    }
}
