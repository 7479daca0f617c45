import ArgumentParser
import MachOReader

/// `dyld3 inspect FILE`.
struct InspectCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "inspect", abstract: "Print a Mach-O file's load commands, fixups and exports.")
    @Argument var file: String
    func run() throws {}
}
