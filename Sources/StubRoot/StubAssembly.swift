import LaunchPlan
import LoaderCore

/// The assembly source of one stub slice. Every export is an 8-byte zero datum in
/// `__DATA,__stub_root` under a global label spelling its name (quoted, so any name
/// works), weak ones marked `.weak_definition`, except Objective-C classes (class
/// objects) and the functions of the runtime's stub (trapping code): ``StubObjC``. The section opens with an unexported
/// datum, so that it exists even when nothing is exported: it is how a later run tells
/// its own stubs from real libraries, and how a launch knows not to run
/// code (`LoaderCore.StubImageMarker`). A host also gets a private entry point in
/// `__TEXT,__text`: one trapping instruction, never run.
enum StubAssembly {
    static let markerSegment = StubImageMarker.segmentName
    static let markerSection = StubImageMarker.sectionName
    /// The host's entry symbol (`-e`): private extern, so it is not exported.
    static let hostEntry = "__dyld3_stub_root_host_entry"

    static func source(for slice: StubSlice, withHostEntry: Bool, isRuntime: Bool = false) throws(CommandFailure) -> String {
        var lines = [
            "/* dyld3 stub-root: data only, never executed */",
            "\t.section \(markerSegment),\(markerSection)",
            "Lstub_root_marker:",
            "\t.quad 0",
        ]
        // Classes become class objects, and the runtime's stub our runtime (StubObjC).
        lines += try StubObjC.lines(for: slice, isRuntime: isRuntime)
        if withHostEntry {
            lines += [
                "\t.text",
                "\t.private_extern \(hostEntry)",
                "\(hostEntry):",
                slice.arch.hasPrefix("arm64") ? "\tbrk #0x1" : "\tud2",
            ]
        }
        return lines.joined(separator: "\n") + "\n"
    }

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
