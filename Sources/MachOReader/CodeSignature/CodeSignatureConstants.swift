// The embedded code signature's constants, under the names Apple's headers give them
// (xnu's cs_blobs.h, the Security framework's CSCommon.h). Every field of a signature is
// big-endian.

/// An embedded signature: the SuperBlob `LC_CODE_SIGNATURE` points at.
public let CSMAGIC_EMBEDDED_SIGNATURE: UInt32 = 0xfade_0cc0
/// The embedded signature of old (10.5-era) tools.
public let CSMAGIC_EMBEDDED_SIGNATURE_OLD: UInt32 = 0xfade_0b02
/// One requirement (an expression in the requirement language, compiled).
public let CSMAGIC_REQUIREMENT: UInt32 = 0xfade_0c00
/// The requirement set: a SuperBlob-like index of requirements by type.
public let CSMAGIC_REQUIREMENTS: UInt32 = 0xfade_0c01
/// A CodeDirectory: the hashes of the code pages and of the other blobs.
public let CSMAGIC_CODEDIRECTORY: UInt32 = 0xfade_0c02
/// Entitlements as an XML property list.
public let CSMAGIC_EMBEDDED_ENTITLEMENTS: UInt32 = 0xfade_7171
/// Entitlements as DER.
public let CSMAGIC_EMBEDDED_DER_ENTITLEMENTS: UInt32 = 0xfade_7172
/// A wrapper around foreign data: the CMS signature.
public let CSMAGIC_BLOBWRAPPER: UInt32 = 0xfade_0b01

/// SuperBlob slot types (`CS_BlobIndex.type`); slots 1 to 11 are also the CodeDirectory's
/// special slots, hashed at `hashOffset - slot * hashSize`.
public let CSSLOT_CODEDIRECTORY: UInt32 = 0
public let CSSLOT_INFOSLOT: UInt32 = 1
public let CSSLOT_REQUIREMENTS: UInt32 = 2
public let CSSLOT_RESOURCEDIR: UInt32 = 3
public let CSSLOT_APPLICATION: UInt32 = 4
public let CSSLOT_ENTITLEMENTS: UInt32 = 5
public let CSSLOT_DER_ENTITLEMENTS: UInt32 = 7
public let CSSLOT_LAUNCH_CONSTRAINT_SELF: UInt32 = 8
public let CSSLOT_LAUNCH_CONSTRAINT_PARENT: UInt32 = 9
public let CSSLOT_LAUNCH_CONSTRAINT_RESPONSIBLE: UInt32 = 10
public let CSSLOT_LIBRARY_CONSTRAINT: UInt32 = 11
/// The first alternate CodeDirectory (one per further hash type).
public let CSSLOT_ALTERNATE_CODEDIRECTORIES: UInt32 = 0x1000
public let CSSLOT_ALTERNATE_CODEDIRECTORY_MAX: UInt32 = 5
public let CSSLOT_ALTERNATE_CODEDIRECTORY_LIMIT: UInt32 = CSSLOT_ALTERNATE_CODEDIRECTORIES + CSSLOT_ALTERNATE_CODEDIRECTORY_MAX
/// The CMS signature (a blob wrapper; empty in an ad-hoc signature).
public let CSSLOT_SIGNATURESLOT: UInt32 = 0x10000
public let CSSLOT_IDENTIFICATIONSLOT: UInt32 = 0x10001
public let CSSLOT_TICKETSLOT: UInt32 = 0x10002

/// CodeDirectory versions: the first version that has each group of fields.
public let CS_SUPPORTSNONE: UInt32 = 0x20001
public let CS_SUPPORTSSCATTER: UInt32 = 0x20100
public let CS_SUPPORTSTEAMID: UInt32 = 0x20200
public let CS_SUPPORTSCODELIMIT64: UInt32 = 0x20300
public let CS_SUPPORTSEXECSEG: UInt32 = 0x20400
public let CS_SUPPORTSRUNTIME: UInt32 = 0x20500
public let CS_SUPPORTSLINKAGE: UInt32 = 0x20600

/// A cdHash is the CodeDirectory's hash truncated to this many bytes.
public let CS_CDHASH_LEN = 20

/// CodeDirectory flags (`CS_CodeDirectory.flags`), also the process's code-signing flags.
public let CS_VALID: UInt32 = 0x1
public let CS_ADHOC: UInt32 = 0x2
public let CS_GET_TASK_ALLOW: UInt32 = 0x4
public let CS_INSTALLER: UInt32 = 0x8
public let CS_FORCED_LV: UInt32 = 0x10
public let CS_INVALID_ALLOWED: UInt32 = 0x20
public let CS_HARD: UInt32 = 0x100
public let CS_KILL: UInt32 = 0x200
public let CS_CHECK_EXPIRATION: UInt32 = 0x400
public let CS_RESTRICT: UInt32 = 0x800
public let CS_ENFORCEMENT: UInt32 = 0x1000
public let CS_REQUIRE_LV: UInt32 = 0x2000
public let CS_ENTITLEMENTS_VALIDATED: UInt32 = 0x4000
public let CS_NVRAM_UNRESTRICTED: UInt32 = 0x8000
public let CS_RUNTIME: UInt32 = 0x10000
public let CS_LINKER_SIGNED: UInt32 = 0x20000

/// Executable-segment flags (`CS_CodeDirectory.execSegFlags`).
public let CS_EXECSEG_MAIN_BINARY: UInt64 = 0x1
public let CS_EXECSEG_ALLOW_UNSIGNED: UInt64 = 0x10
public let CS_EXECSEG_DEBUGGER: UInt64 = 0x20
public let CS_EXECSEG_JIT: UInt64 = 0x40
public let CS_EXECSEG_SKIP_LV: UInt64 = 0x80
public let CS_EXECSEG_CAN_LOAD_CDHASH: UInt64 = 0x100
public let CS_EXECSEG_CAN_EXEC_CDHASH: UInt64 = 0x200

/// Requirement types in a requirement set (`CS_Requirements`).
public let kSecHostRequirementType: UInt32 = 1
public let kSecGuestRequirementType: UInt32 = 2
public let kSecDesignatedRequirementType: UInt32 = 3
public let kSecLibraryRequirementType: UInt32 = 4
public let kSecPluginRequirementType: UInt32 = 5

/// Names for the flags and slots, for printing.
public enum CodeSignatureNames {
    static let flags: [(UInt32, String)] = [
        (CS_VALID, "valid"), (CS_ADHOC, "adhoc"), (CS_GET_TASK_ALLOW, "get-task-allow"), (CS_INSTALLER, "installer"),
        (CS_FORCED_LV, "forced-lv"), (CS_INVALID_ALLOWED, "invalid-allowed"), (CS_HARD, "hard"), (CS_KILL, "kill"),
        (CS_CHECK_EXPIRATION, "check-expiration"), (CS_RESTRICT, "restrict"), (CS_ENFORCEMENT, "enforcement"),
        (CS_REQUIRE_LV, "library-validation"), (CS_ENTITLEMENTS_VALIDATED, "entitlements-validated"),
        (CS_NVRAM_UNRESTRICTED, "nvram-unrestricted"), (CS_RUNTIME, "runtime"), (CS_LINKER_SIGNED, "linker-signed"),
    ]
    static let execSegFlags: [(UInt64, String)] = [
        (CS_EXECSEG_MAIN_BINARY, "main-binary"), (CS_EXECSEG_ALLOW_UNSIGNED, "allow-unsigned"),
        (CS_EXECSEG_DEBUGGER, "debugger"), (CS_EXECSEG_JIT, "jit"), (CS_EXECSEG_SKIP_LV, "skip-lv"),
        (CS_EXECSEG_CAN_LOAD_CDHASH, "can-load-cdhash"), (CS_EXECSEG_CAN_EXEC_CDHASH, "can-exec-cdhash"),
    ]

    /// `adhoc,linker-signed`, with any unnamed bits as hex; `none` for 0.
    public static func flagNames(_ flags: UInt32) -> String {
        names(UInt64(flags), flags: Self.flags.map { (UInt64($0.0), $0.1) })
    }

    public static func execSegFlagNames(_ flags: UInt64) -> String {
        names(flags, flags: execSegFlags)
    }

    static func names(_ value: UInt64, flags: [(UInt64, String)]) -> String {
        var parts: [String] = []
        var rest = value
        for (bit, name) in flags where value & bit != 0 {
            parts.append(name)
            rest &= ~bit
        }
        if rest != 0 { parts.append("0x" + String(rest, radix: 16)) }
        return parts.isEmpty ? "none" : parts.joined(separator: ",")
    }

    /// The name of a SuperBlob slot type.
    public static func slotName(_ type: UInt32) -> String {
        switch type {
        case CSSLOT_CODEDIRECTORY: "CodeDirectory"
        case CSSLOT_INFOSLOT: "Info.plist"
        case CSSLOT_REQUIREMENTS: "Requirements"
        case CSSLOT_RESOURCEDIR: "Resources"
        case CSSLOT_APPLICATION: "Application"
        case CSSLOT_ENTITLEMENTS: "Entitlements"
        case CSSLOT_DER_ENTITLEMENTS: "DER entitlements"
        case CSSLOT_LAUNCH_CONSTRAINT_SELF: "Launch constraint (self)"
        case CSSLOT_LAUNCH_CONSTRAINT_PARENT: "Launch constraint (parent)"
        case CSSLOT_LAUNCH_CONSTRAINT_RESPONSIBLE: "Launch constraint (responsible)"
        case CSSLOT_LIBRARY_CONSTRAINT: "Library constraint"
        case CSSLOT_ALTERNATE_CODEDIRECTORIES..<CSSLOT_ALTERNATE_CODEDIRECTORY_LIMIT:
            "Alternate CodeDirectory \(type - CSSLOT_ALTERNATE_CODEDIRECTORIES)"
        case CSSLOT_SIGNATURESLOT: "CMS signature"
        case CSSLOT_IDENTIFICATIONSLOT: "Identification"
        case CSSLOT_TICKETSLOT: "Ticket"
        default: "slot 0x\(String(type, radix: 16))"
        }
    }

    /// The name of a requirement type.
    public static func requirementTypeName(_ type: UInt32) -> String {
        (kSecHostRequirementType...kSecPluginRequirementType).contains(type)
            ? ["host", "guest", "designated", "library", "plugin"][Int(type) - 1] : "type \(type)"
    }
}
