import TestSupport
import Foundation
import LaunchClosure
import LoaderCore
import Testing

/// Launch closures: install, verify, dump, reproducibility, equality with the slow path,
/// corruption and staleness.
@Suite struct ClosureTests {
    static let apps = (try? FixtureApp.all()) ?? []
    static let launchable = apps.filter(\.launches)
    static let failing = apps.filter { !$0.launches }
}

/// A fixture app built by `tools/build-fixtures`, and whether its manifest says it launches.
extension FixtureApp {
    /// The app's closure, built as `dyld3 install` builds it.
    func closure(contentOnly: Bool = false) throws -> LaunchClosure {
        try ClosureBuilder.build(roots: [executable], arch: arch, root: root, contentOnlyIdentity: contentOnly)
    }

    /// Builds the app's closure and writes it into `cache`; returns its path.
    @discardableResult
    func install(into cache: String, contentOnly: Bool = false) throws -> String {
        let store = ClosureCache(directory: cache)
        try store.prepareForWriting()
        let path = store.closurePath(forApp: executable, arch: arch)
        try ClosureFile.write(try closure(contentOnly: contentOnly), to: path)
        return path
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Fresh directories under the system temporary directory, mode 0755 whatever the umask
/// (a closure in a directory others can write is refused as untrusted).
enum Scratch {
    static func directory(_ purpose: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("dyld3-closure-\(purpose)-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        return path
    }

    /// Writes `bytes` to `path` with mode 0644.
    static func write(_ bytes: [UInt8], to path: String) throws {
        try? FileManager.default.removeItem(atPath: path)
        guard FileManager.default.createFile(atPath: path, contents: Data(bytes), attributes: [.posixPermissions: 0o644]) else {
            throw TestFailure("cannot write \(path)")
        }
    }

    static func remove(_ path: String) {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// The built `dyld3` executable, run as CI runs it.
enum Dyld3Binary {
    /// Next to the test bundle (`swift test` builds every product into the same directory),
    /// else in the repository's default build directory.
    static func path() throws -> String {
        var candidates: [URL] = []
        if let executable = Bundle.main.executableURL { candidates.append(executable.deletingLastPathComponent()) }
        candidates += Bundle.allBundles.map { $0.bundleURL.deletingLastPathComponent() }
        candidates.append(Paths.repoRoot.appendingPathComponent(".build/debug"))
        for directory in candidates {
            let binary = directory.appendingPathComponent("dyld3").path
            if FileManager.default.isExecutableFile(atPath: binary) { return binary }
        }
        throw TestFailure("no dyld3 executable in \(candidates.map(\.path)): run swift build first")
    }

    struct Result {
        let status: Int32
        let stdout: String
        let stderr: String
        var lines: [String] { stdout.split(separator: "\n").map(String.init) }
    }

    static func run(_ arguments: [String]) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try path())
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
                      stderr: String(decoding: errData, as: UTF8.self))
    }

    /// `dyld3 verify --cache CACHE [--json]`.
    static func verify(_ cache: String, json: Bool = false) throws -> Result {
        try run(["verify", "--cache", cache] + (json ? ["--json"] : []))
    }
}

/// Fixups as memory ends up holding them: one per location, the last one written wins.
func finalFixups(_ fixups: [ResolvedFixup]) -> [UInt64: ResolvedFixup.Kind] {
    Dictionary(fixups.map { ($0.vmOffset, $0.kind) }, uniquingKeysWith: { _, last in last })
}

