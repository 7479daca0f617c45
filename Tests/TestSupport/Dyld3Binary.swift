import Foundation

/// The built `dyld3` executable, found as `swift test` lays products out.
public enum Dyld3Binary {
    public static func path() throws -> String {
        var candidates: [URL] = []
        if let executable = Bundle.main.executableURL { candidates.append(executable.deletingLastPathComponent()) }
        candidates += Bundle.allBundles.map { $0.bundleURL.deletingLastPathComponent() }
        candidates.append(Paths.repoRoot.appendingPathComponent(".build/debug"))
        for directory in candidates {
            let binary = directory.appendingPathComponent("dyld3").path
            if FileManager.default.isExecutableFile(atPath: binary) { return binary }
        }
        throw FixtureError("no dyld3 executable in \(candidates.map(\.path)): run swift build first")
    }

    public struct Result: Sendable {
        public let status: Int32
        public let stdout: String
        public let stderr: String

        /// stdout, line by line.
        public var lines: [String] { stdout.split(separator: "\n").map(String.init) }

        /// The `--json` launch report.
        public var json: [String: Any]? {
            (try? JSONSerialization.jsonObject(with: Data(stdout.utf8))) as? [String: Any]
        }
    }

    /// A started process whose output is collected when it ends.
    public final class Running: @unchecked Sendable {
        public let process = Process()
        private let out = Pipe(), err = Pipe()

        public init(_ arguments: [String]) throws {
            process.executableURL = URL(fileURLWithPath: try Dyld3Binary.path())
            process.arguments = arguments
            process.standardOutput = out
            process.standardError = err
            try process.run()
        }

        public func finish() -> Result {
            let outData = out.fileHandleForReading.readDataToEndOfFile()
            let errData = err.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return Result(status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
                          stderr: String(decoding: errData, as: UTF8.self))
        }
    }

    public static func run(_ arguments: [String]) throws -> Result {
        try Running(arguments).finish()
    }

    /// `dyld3 launch APP --mode auto --json` with the app's root and `cache`.
    public static func launchAuto(_ app: FixtureApp, cache: String) throws -> Result {
        try run(["launch", app.bundle, "--root", app.root, "--cache", cache, "--mode", "auto", "--json"])
    }

    /// `dyld3 verify --cache CACHE [--json]`.
    public static func verify(_ cache: String, json: Bool = false) throws -> Result {
        try run(["verify", "--cache", cache] + (json ? ["--json"] : []))
    }
}
