import ArgumentParser
import Foundation
import ClosureCache
import LaunchPlan
import MachOInspect
import StubRoot
import LoaderSystem

/// `dyld3 stub-root BINARY… --out DIR`: stub system libraries and a stub host, so that the
/// binaries' dependency graphs load from DIR without macOS.
struct StubRootCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stub-root",
        abstract: "Write stub system libraries and a stub host for Mach-O binaries into a root directory.",
        discussion: """
            For every absolute install name the binaries' dependency graphs load but that \
            exists neither in DIR nor in the graph, writes a Mach-O stub dylib at \
            DIR/<install name> exporting exactly the symbols imported from it, and writes \
            DIR/bin/host, an executable exporting what flat-namespace lookups find in no \
            image. A dylib or bundle linking a framework by @rpath or @executable_path \
            that exists nowhere gets an app host instead (DIR/App.app/App on iOS, \
            DIR/App.app/Contents/MacOS/App on macOS) and a stub framework in the bundle. \
            Everything is built for the binaries' platform. Imports nothing provides are \
            listed on stderr and the exit status is 1. See docs/stub-roots.md.
            """)

    @Argument(help: "Mach-O binaries (dylibs, bundles, executables; thin or universal), app bundles (X.app, Payload/X.app) or .ipa files.")
    var binaries: [String]

    @Option(help: "The stub root directory.") var out: String
    @Option(help: "An architecture to plan for (repeatable). Default: every architecture of each binary.") var arch: [String] = []
    @Flag(help: "Print one JSON document (docs/json.md): the stubs written, the host, and what stays unresolved.") var json = false
    @Option(help: "The closure cache whose work area an .ipa is unpacked into. Default: $DYLD3_CACHE, else cache/.") var cache: String?

    func run() async throws {
        let plan = try await CommandFailure.reporting(json: json) {
            // A binary that is not there is named as the other commands name it.
            for binary in binaries where FileStatus.of(binary) == nil { throw LoadError.unusable(path: binary, reason: "no such file or directory") }
            // An app bundle or .ipa stands for its main executable.
            let images = try binaries.map { try AppLocator.mainImage(of: try AppLocator.unpacked($0, cache: ClosureCache.resolve(cache))) }
            let plan = try StubRootPlan(binaries: images, arches: arch.isEmpty ? nil : arch, root: out)
            try await plan.write()
            return plan
        }
        let problems = plan.missingDylibs.map(\.description) + plan.unresolved.map(\.description)
        print(json ? Self.jsonReport(plan, problems: problems).serialized() : ([plan.summary] + plan.stubListing.map { "  " + $0 }).joined(separator: "\n"))
        guard problems.isEmpty else {
            FileHandle.standardError.write(Data(problems.map { "dyld3: \($0)\n" }.joined().utf8))
            throw ExitCode(1)
        }
    }

    /// The stubs (install name, path, architectures, exports), the host, and the problems.
    static func jsonReport(_ plan: StubRootPlan, problems: [String]) -> JSONValue {
        func arches(_ slices: [StubSlice]) -> JSONValue { .array(slices.map { .string($0.arch) }) }
        func exports(_ slices: [StubSlice]) -> Int64 { Int64(Set(slices.flatMap { $0.exports.map(\.name) }).count) }
        return .object([
            ("schema_version", .int(JSONValue.schemaVersion)),
            ("root", .string(plan.root)),
            ("stubs", .array(plan.stubs.map { stub in
                .object([("install_name", .string(stub.installName)), ("path", .string(stub.path)),
                         ("arches", arches(stub.slices)), ("exports", .int(exports(stub.slices)))])
            })),
            ("host", .object([("path", .string(plan.host.path)), ("arches", arches(plan.host.slices)),
                              ("exports", .int(exports(plan.host.slices)))])),
            ("problems", .array(problems.map(JSONValue.string))),
        ])
    }
}
