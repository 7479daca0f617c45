import MachOReader
import ArgumentParser
import Foundation
import LaunchPlan
import MachOInspect
import LoaderSystem

/// How a command reports a failure: under `--json` stdout also gets
/// `{"error": {"kind", "what", "why", "fix"}}`; any error becomes the one line it reports.
extension CommandFailure {
    var json: JSONValue {
        .object([("schema_version", .int(JSONValue.schemaVersion)), ("error", errorObject)])
    }

    /// `{"kind", "what", "why", "fix"}`: the failure inside a larger document.
    var errorObject: JSONValue {
        .object([("kind", .string(kind)), ("what", .string(what)), ("why", .string(why)), ("fix", fix.map(JSONValue.string) ?? .null)])
    }

    /// Where a command was when it failed, for the fixes it can suggest.
    struct Context {
        /// The app named on the command line, `--root` and `--cache`, each when given.
        var app: String?, root: String?, cache: String?
    }

    /// Any error a command meets, as the line it reports.
    init(_ error: any Error, context: Context = Context()) {
        switch error {
        case let failure as CommandFailure:
            self = failure
        case let error as LoadError:
            self.init(error, context: context)
        case let error as ClosureError:
            self.init(error, context: context)
        case let error as MachOError:
            self.init(splitting: error.description, kind: error.isArchive ? "app-archive" : "malformed")
        default:
            self.init(splitting: "\(error)", kind: "error")
        }
    }

    init(_ error: LoadError, context: Context) {
        switch error {
        case let .missingDylib(installName, neededBy, tried):
            let triedText = tried.isEmpty ? "no candidate paths" : "tried " + tried.joined(separator: ", ")
            self.init(what: installName, why: "library not loaded (referenced from \(neededBy); \(triedText))", kind: "missing-library")
            if context.root == nil, installName.hasPrefix("/") {
                fix = "give --root DIR, the system root that holds \(installName)"
                    + (Self.suggestedRoot(for: context.app).map { " (for this app: --root \($0))" }
                        ?? "; for an Apple-built app, make one: `dyld3 stub-root \(context.app ?? "APP") --out DIR` (docs/stub-roots.md)")
            }
        case let .missingSymbol(symbol, importedBy, expectedIn):
            self.init(what: symbol, why: "symbol not found (referenced from \(importedBy); expected in \(expectedIn))", kind: "missing-symbol")
        case .malformed: self.init(splitting: error.description, kind: "malformed")
        case .wrongArchitecture: self.init(splitting: error.description, kind: "wrong-architecture")
        case .unusable, .failed: self.init(splitting: error.description, kind: "unusable")
        case .systemCall: self.init(splitting: error.description, kind: "error")
        case .mapping: self.init(splitting: error.description, kind: "mapping")
        case let .codeSignature(path, failure):
            self.init(what: path, why: "code signature invalid: \(failure)", kind: "code-signature")
            fix = "sign the image again (or restore it); `dyld3 codesign verify \(path)` shows every page that fails"
        case let .signingPolicy(path, rule, why):
            self.init(what: path, why: "refused by \(rule.rawValue): \(why)", kind: "signing-policy")
            fix = rule == .requireSignatures ? "sign the image, or launch without --require-signatures"
                : "sign the image with the main executable's team ID, or launch without --library-validation"
        }
    }

    init(_ error: ClosureError, context: Context) {
        switch error {
        case let .missing(path):
            var install = "dyld3 install " + (context.app ?? "APP")
            if let root = context.root { install += " --root \(root)" }
            if let cache = context.cache { install += " --cache \(cache)" }
            self.init(what: path, why: "no closure", fix: "run `\(install)` first", kind: "no-closure")
        default:
            self.init(splitting: error.description, kind: error.kind)
        }
    }

    /// The key file `path` given to `option`, read by `read`; one that cannot be used fails
    /// naming the option.
    static func readKey<Key>(_ path: String, option: String, _ read: (String) throws(CommandFailure) -> Key) throws(CommandFailure) -> Key {
        do { return try read(path) } catch { throw CommandFailure(what: "\(option) \(error.what)", why: error.why, fix: error.fix, kind: error.kind) }
    }

    /// The system root beside an app built as the fixtures are (`DIR/X.app` with `DIR/root`).
    static func suggestedRoot(for app: String?) -> String? {
        guard let app else { return nil }
        var directory = (app as NSString).deletingLastPathComponent
        if (directory as NSString).lastPathComponent.hasSuffix(".app") { directory = (directory as NSString).deletingLastPathComponent }
        let root = (directory.isEmpty ? "." : directory) + "/root"
        return FileStatus.of(root)?.isDirectory == true ? root : nil
    }

    /// Writes the failure (stderr; stdout too under `--json`).
    func report(json: Bool) {
        if json { print(self.json.serialized()) }
        printError(line)
    }

    /// Runs a command's body: any error but an exit status or a usage error is reported as
    /// one failure and ends the command with status 1.
    static func reporting<T>(json: Bool = false, context: Context = Context(), _ body: () throws -> T) throws -> T {
        do { return try body() } catch { throw ending(error, json: json, context: context) }
    }

    static func reporting<T>(json: Bool = false, context: Context = Context(), _ body: () async throws -> T) async throws -> T {
        do { return try await body() } catch { throw ending(error, json: json, context: context) }
    }

    /// What a command that failed with `error` ends with: an exit status or a usage error as
    /// it is, anything else reported (as ``report(json:)``) and replaced by status 1.
    private static func ending(_ error: any Error, json: Bool, context: Context) -> any Error {
        if error is ExitCode || error is ValidationError { return error }
        CommandFailure(error, context: context).report(json: json)
        return ExitCode(1)
    }
}

/// `line` and a newline on standard error, unbuffered.
func printError(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}
