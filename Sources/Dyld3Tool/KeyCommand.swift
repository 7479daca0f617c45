import ArgumentParser
import Foundation
import ClosureFormat
import LaunchPlan
import MachOInspect

/// `dyld3 key generate --out DIR`: an Ed25519 key pair for signing closure caches that travel.
struct KeyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "key", abstract: "Manage closure-signing keys.", subcommands: [Generate.self])

    /// Writes a new key pair.
    struct Generate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Generate an Ed25519 key pair: DIR/closure-signing.key (private, mode 0600) and DIR/closure-signing.pub.",
            discussion: "Sign with `install --sign DIR/closure-signing.key`; trust with `launch|compare|verify --trust DIR/closure-signing.pub`. Existing keys are never overwritten.")

        @Option(help: "The directory to write the key pair into (created if missing).") var out: String
        @Flag(help: "Print the two paths as JSON (docs/json.md).") var json = false

        func run() throws {
            try CommandFailure.reporting(json: json) {
                do {
                    try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
                } catch {
                    throw CommandFailure(what: out, why: "cannot create the directory: \(error.localizedDescription)", kind: "key")
                }
                let paths = try ClosureSigningKey().write(into: out)
                if json {
                    print(JSONValue.object([
                        ("schema_version", .int(JSONValue.schemaVersion)),
                        ("private_key", .string(paths.privateKey)), ("public_key", .string(paths.publicKey)),
                    ]).serialized())
                } else {
                    print("private key: \(paths.privateKey) (mode 0600: keep it secret)")
                    print("package key:  \(paths.publicKey)")
                }
            }
        }
    }
}
