import LoaderCore
import LaunchPlan

/// Why a stub root could not be planned or written.
package enum StubRootError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A binary or a library of its graph could not be read, parsed or used.
    case load(LoadError)
    /// A binary has none of the architectures asked for.
    case noArchitecture(binary: String, wanted: [String], available: [String])
    /// A symbol name the assembler cannot spell (a control character).
    case unrepresentableSymbol(String)
    /// The assembler, linker or lipo failed: the command line and what it printed.
    case toolFailed(command: String, output: String)
    /// A file or directory could not be written.
    case io(path: String, reason: String)
    /// A binary's platform is one stub roots are not built for.
    case unsupportedPlatform(binary: String, arch: String, platform: String)
    /// The binaries are built for different platforms: one root serves one platform.
    case mixedPlatforms(binary: String, arch: String, platform: String, others: String)

    package var description: String {
        switch self {
        case let .load(error):
            return "\(error)"
        case let .noArchitecture(binary, wanted, available):
            return "\(binary): no \(wanted.joined(separator: "/")) slice (has \(available.joined(separator: ", ")))"
        case let .unrepresentableSymbol(name):
            return "symbol \(name.debugDescription) cannot be written in assembly"
        case let .toolFailed(command, output):
            return "\(command) failed:\n\(output)"
        case let .io(path, reason):
            return "\(path): \(reason)"
        case let .unsupportedPlatform(binary, arch, platform):
            return "\(binary) (\(arch)): built for \(platform); stub roots are built for macOS, iOS and the iOS simulator"
        case let .mixedPlatforms(binary, arch, platform, others):
            return "\(binary) (\(arch)) is built for \(platform), the other binaries for \(others): make one stub root per platform"
        }
    }
}
