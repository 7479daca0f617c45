import Foundation
import ClosureCache
import LoaderCore
import TestSupport
import Testing
import ClosureFormat

struct HostileFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension FixtureApp {
    /// One fixture app by name and variant; fails loudly when the fixtures are not built.
    static func named(_ name: String, _ variant: String = "x86_64-chained") throws -> FixtureApp {
        guard let app = try FixtureApp.all().first(where: { $0.name == name && $0.variant == variant }) else {
            throw HostileFailure("no fixture app \(name) [\(variant)]")
        }
        return app
    }

    /// The manifest's result; fails for apps expected not to launch.
    var expectedResult: Int32 {
        get throws {
            guard case let .result(value, _) = expectation else { throw HostileFailure("\(self) does not launch") }
            return value
        }
    }
}

/// Fresh directories, mode 0755 whatever the umask (closures in directories others can
/// write are refused).
enum Scratch {
    static func directory(_ purpose: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("dyld3-hostile-\(purpose)-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        return path
    }

    static func remove(_ path: String) {
        try? FileManager.default.removeItem(atPath: path)
    }
}
