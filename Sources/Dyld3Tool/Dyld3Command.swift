import ArgumentParser
import ClosureFormat
import Foundation
import LaunchPlan
import MachOInspect

/// The `dyld3` command: inspect Mach-O images, and (as the product grows) install,
/// launch and verify launch closures.
@main
struct Dyld3Command: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dyld3",
        abstract: "A dyld3-style launch-closure builder and loader for Mach-O apps.",
        version: Dyld3Version.description,
        subcommands: [InspectCommand.self, InstallCommand.self, LaunchCommand.self, CompareCommand.self, StubRootCommand.self, VerifyCommand.self, CodesignCommand.self, ClosureCommand.self, KeyCommand.self, BenchCommand.self, SharedCacheCommand.self])

    /// A subcommand that is not one is named with the nearest one (`dyld3 lauch` → launch)
    /// before the arguments are parsed; everything else is swift-argument-parser's.
    static func main() async {
        if let failure = SubcommandSuggestion.failure(for: Array(CommandLine.arguments.dropFirst()), under: Dyld3Command.self) {
            failure.report(json: false)
            Foundation.exit(ExitCode.validationFailure.rawValue)
        }
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand { try await asyncCommand.run() } else { try command.run() }
        } catch {
            exit(withError: error)
        }
    }
}

/// What `dyld3 --version` prints: the release, and the versions of the formats it writes
/// and reads (a closure, a prelinked set or a JSON document of another version is refused
/// or read differently).
enum Dyld3Version {
    /// The one place the release is written.
    static let release = "0.9.0"

    static var description: String {
        "dyld3 \(release) (closure format \(LaunchClosure.formatVersion), prelinked set format \(PrelinkedSet.formatVersion), "
            + "JSON schema \(JSONValue.schemaVersion))"
    }
}

/// The subcommand a mistyped word was meant to be.
enum SubcommandSuggestion {
    /// The failure to report for `arguments`, when a word in a subcommand's place names
    /// none: `WORD: no such subcommand of PARENT; did you mean NAME?` (or the list of them).
    static func failure(for arguments: [String], under root: any ParsableCommand.Type) -> CommandFailure? {
        var command = root
        var path = [name(of: root)]
        for argument in arguments {
            let subcommands = command.configuration.subcommands
            guard !subcommands.isEmpty, command.configuration.defaultSubcommand == nil else { return nil }
            if argument.hasPrefix("-") || argument == "help" { return nil }
            guard let next = subcommands.first(where: { name(of: $0) == argument || $0.configuration.aliases.contains(argument) }) else {
                let names = subcommands.map(name(of:))
                let nearest = names.map { (name: $0, distance: editDistance(argument, $0)) }.min { $0.distance < $1.distance }
                let fix = if let nearest, nearest.distance <= max(2, nearest.name.count / 3) {
                    "did you mean `\((path + [nearest.name]).joined(separator: " "))`?"
                } else {
                    "the subcommands are " + names.joined(separator: ", ") + " (`\(path.joined(separator: " ")) --help`)"
                }
                return CommandFailure(what: argument, why: "no such subcommand of \(path.joined(separator: " "))", fix: fix, kind: "usage")
            }
            command = next
            path.append(argument)
        }
        return nil
    }

    static func name(of command: any ParsableCommand.Type) -> String {
        command.configuration.commandName ?? String(describing: command).lowercased()
    }

    /// Levenshtein distance, with a transposition of two neighbours counted as one edit.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        guard !a.isEmpty, !b.isEmpty else { return max(a.count, b.count) }
        var rows = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { rows[i][0] = i }
        for j in 0...b.count { rows[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                rows[i][j] = min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { rows[i][j] = min(rows[i][j], rows[i - 2][j - 2] + 1) }
            }
        }
        return rows[a.count][b.count]
    }
}
