import Foundation
import ProcessRunner

/// The built `dyld3` executable, found as `swift test` lays products out.
package enum Dyld3Binary {
    package static func path() throws -> String {
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

    package struct Result: Sendable {
        package let status: Int32
        package let stdout: String
        package let stderr: String

        /// stdout, line by line.
        package var lines: [String] { stdout.split(separator: "\n").map(String.init) }

        /// The `--json` launch report.
        package var json: [String: Any]? {
            (try? JSONSerialization.jsonObject(with: Data(stdout.utf8))) as? [String: Any]
        }
    }

    /// Runs `dyld3 ARGS` to its end (through ``ProcessRunner``).
    package static func run(_ arguments: [String]) async throws -> Result {
        try await run(arguments, while: { _ in })
    }

    /// The least time a run is given, whatever its caller asks: on a CI machine whose two
    /// cores are busy, a debug build's run that takes a second alone can take a minute.
    package static let minimumLimitSeconds = 300

    /// Runs `dyld3 ARGS`, killed (SIGKILL, status 137) if it has not ended after `seconds`
    /// (at least ``minimumLimitSeconds``): a launch that could hang fails its test instead of
    /// holding up the run. `environment` entries (`NAME=value`) are added to the child's environment.
    package static func run(_ arguments: [String], limitSeconds seconds: Int, environment: [String] = []) async throws -> Result {
        let limit = max(seconds, minimumLimitSeconds)
        let result = try await ProcessRunner.run(
            "/usr/bin/timeout", ["-s", "KILL", "\(limit)", "/usr/bin/env"] + environment + [try path()] + arguments, error: .captured)
        return Result(status: result.status, stdout: result.output, stderr: result.error)
    }

    /// Runs `dyld3 ARGS` with `body` alongside it (which may kill it); returns when both end.
    package static func run(
        _ arguments: [String], while body: (ProcessRunner.RunningProcess) async throws -> Void
    ) async throws -> Result {
        let result = try await ProcessRunner.run(try path(), arguments, error: .captured, while: body)
        return Result(status: result.status, stdout: result.output, stderr: result.error)
    }

    /// Another user to run as (`setpriv --reuid --regid --clear-groups`): ownership tests run
    /// the victim as `nobody` when they run as root.
    package struct User: Sendable {
        package let uid: UInt32
        package let gid: UInt32
        package init(uid: UInt32, gid: UInt32) {
            self.uid = uid
            self.gid = gid
        }

        package static let nobody = User(uid: 65534, gid: 65534)
        package static let daemon = User(uid: 1, gid: 1)
        package static let root = User(uid: 0, gid: 0)
    }

    /// Runs `dyld3 arguments` as `user`.
    package static func run(_ arguments: [String], as user: User) async throws -> Result {
        let result = try await ProcessRunner.run(
            "/usr/bin/setpriv", ["--reuid=\(user.uid)", "--regid=\(user.gid)", "--clear-groups", try path()] + arguments,
            error: .captured, while: { _ in })
        return Result(status: result.status, stdout: result.output, stderr: result.error)
    }

    /// `dyld3 launch APP --mode auto --json` with the app's root and `cache`.
    package static func launchAuto(_ app: FixtureApp, cache: String) async throws -> Result {
        try await run(["launch", app.bundle, "--root", app.root, "--cache", cache, "--mode", "auto", "--json"])
    }

    /// `dyld3 verify --cache CACHE [--json]`.
    package static func verify(_ cache: String, json: Bool = false) async throws -> Result {
        try await run(["verify", "--cache", cache] + (json ? ["--json"] : []))
    }
}
