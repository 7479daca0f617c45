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

        public init(_ arguments: [String], as user: User? = nil) throws {
            if let user {
                process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
                process.arguments = ["--reuid=\(user.uid)", "--regid=\(user.gid)", "--clear-groups", try Dyld3Binary.path()] + arguments
            } else {
                process.executableURL = URL(fileURLWithPath: try Dyld3Binary.path())
                process.arguments = arguments
            }
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

    /// Another user to run as (`setpriv --reuid --regid --clear-groups`): ownership tests run
    /// the victim as `nobody` when they run as root.
    public struct User: Sendable {
        public let uid: UInt32
        public let gid: UInt32
        public init(uid: UInt32, gid: UInt32) {
            self.uid = uid
            self.gid = gid
        }

        public static let nobody = User(uid: 65534, gid: 65534)
        public static let daemon = User(uid: 1, gid: 1)
        public static let root = User(uid: 0, gid: 0)
    }

    /// Runs `dyld3 arguments` as `user`.
    public static func run(_ arguments: [String], as user: User) throws -> Result {
        try Running(arguments, as: user).finish()
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
