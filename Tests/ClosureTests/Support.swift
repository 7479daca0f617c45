import TestSupport
import Foundation
import ClosureCache
import LoaderCore
import Testing
import LaunchPlan
import ClosureFormat

/// Launch closures: install, verify, dump, reproducibility, equality with the slow path,
/// corruption and staleness.
@Suite(.bounded) struct ClosureTests {
    static let apps = (try? FixtureApp.all()) ?? []
    static let launchable = apps.filter(\.launches)
    static let failing = apps.filter { !$0.launches }
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


/// Fixups as memory ends up holding them: one per location, the last one written wins.
func finalFixups(_ fixups: [ResolvedFixup]) -> [UInt64: ResolvedFixup.Kind] {
    Dictionary(fixups.map { ($0.vmOffset, $0.kind) }, uniquingKeysWith: { _, last in last })
}

