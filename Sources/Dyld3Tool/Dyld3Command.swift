import ArgumentParser

/// The `dyld3` command: inspect Mach-O images, and (as the product grows) install,
/// launch and verify launch closures.
@main
struct Dyld3Command: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dyld3",
        abstract: "A dyld3-style launch-closure builder and loader for Mach-O apps.",
        subcommands: [InspectCommand.self, InstallCommand.self, LaunchCommand.self, CompareCommand.self, StubRootCommand.self, VerifyCommand.self, CodesignCommand.self, ClosureCommand.self, KeyCommand.self, BenchCommand.self, SharedCacheCommand.self])
}
