import LaunchPlan

/// Why a stub root could not be planned or written: each reads as the line `dyld3 stub-root`
/// reports.
extension CommandFailure {
    /// A binary or a library of its graph could not be read, parsed or used.
    static func load(_ error: LoadError) -> CommandFailure { stubRoot("\(error)") }

    /// A binary has none of the architectures asked for.
    static func noArchitecture(binary: String, wanted: [String], available: [String]) -> CommandFailure {
        stubRoot("\(binary): no \(wanted.joined(separator: "/")) slice (has \(available.joined(separator: ", ")))")
    }

    /// A symbol name the assembler cannot spell (a control character).
    static func unrepresentableSymbol(_ name: String) -> CommandFailure {
        stubRoot("symbol \(name.debugDescription) cannot be written in assembly")
    }

    /// The assembler, linker or lipo failed: the command line and what it printed.
    static func toolFailed(command: String, output: String) -> CommandFailure { stubRoot("\(command) failed:\n\(output)") }

    /// A file or directory could not be written.
    static func io(path: String, reason: String) -> CommandFailure { stubRoot("\(path): \(reason)") }

    /// A binary's platform is one stub roots are not built for.
    static func unsupportedPlatform(binary: String, arch: String, platform: String) -> CommandFailure {
        stubRoot("\(binary) (\(arch)): built for \(platform); stub roots are built for macOS, iOS and the iOS simulator")
    }

    /// The binaries are built for different platforms: one root serves one platform.
    package static func mixedPlatforms(binary: String, arch: String, platform: String, others: String) -> CommandFailure {
        stubRoot("\(binary) (\(arch)) is built for \(platform), the other binaries for \(others): make one stub root per platform")
    }

    private static func stubRoot(_ text: String) -> CommandFailure { CommandFailure(splitting: text, kind: "error") }
}
