import ArgumentParser

/// The `dyld3` command: inspect Mach-O images, and (as the product grows) install,
/// launch and verify launch closures.
struct Dyld3: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dyld3",
        abstract: "A dyld3-style launch-closure builder and loader for Mach-O apps.",
        subcommands: [InspectCommand.self, LaunchCommand.self])
}

Dyld3.main()
