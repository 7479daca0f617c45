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
        }
    }
}
