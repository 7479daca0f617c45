import LaunchPlan
import LoaderCore

/// The assembly source of one stub slice: every export an 8-byte zero datum under a quoted
/// global label (weak ones `.weak_definition`), but classes and the runtime's functions
/// (``StubObjC``). The marker section opens with an unexported datum, so it always exists: it
/// tells a later run its own stubs, and a launch not to run code (`LoaderCore.StubImageMarker`).
/// A host also gets a private entry point: one trapping instruction, never run.
enum StubAssembly {
    /// The host's entry symbol (`-e`): private extern, so it is not exported.
    static let hostEntry = "__dyld3_stub_root_host_entry"

    static func source(for slice: StubSlice, withHostEntry: Bool, isRuntime: Bool = false) throws(CommandFailure) -> String {
        var lines = ["/* dyld3 stub-root: data only, never executed */",
                     "\t.section \(StubImageMarker.segmentName),\(StubImageMarker.sectionName)", "Lstub_root_marker:", "\t.quad 0"]
        // Classes become class objects, and the runtime's stub our runtime (StubObjC).
        lines += try StubObjC.lines(for: slice, isRuntime: isRuntime)
        if withHostEntry { lines += ["\t.text", "\t.private_extern \(hostEntry)", "\(hostEntry):", trap(arch: slice.arch)] }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The instruction that traps on `arch`: what stands for code no stub ever runs.
    static func trap(arch: String) -> String { arch.hasPrefix("arm64") ? "\tbrk #0x1" : "\tud2" }

    /// `name` as a quoted assembler symbol: backslashes and quotes escaped, control
    /// characters and the empty name refused.
    static func quoted(_ name: String) throws(CommandFailure) -> String {
        guard !name.isEmpty else { throw .unrepresentableSymbol(name) }
        var text = "\""
        for scalar in name.unicodeScalars {
            switch scalar {
            case "\\", "\"": text += "\\" + String(scalar)
            case _ where scalar.value < 0x20 || scalar.value == 0x7f: throw .unrepresentableSymbol(name)
            default: text.unicodeScalars.append(scalar)
            }
        }
        return text + "\""
    }
}
