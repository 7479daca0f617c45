import Foundation
import LaunchClosure
import LoaderCore
import TestSupport
import Testing

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


/// The address ranges of this process's mappings (`/proc/self/maps`).
enum ProcessMaps {
    static func ranges() throws -> [Range<UInt64>] {
        let text = try String(contentsOfFile: "/proc/self/maps", encoding: .utf8)
        return text.split(separator: "\n").compactMap { line in
            let bounds = line.split(separator: " ").first?.split(separator: "-") ?? []
            guard bounds.count == 2, let low = UInt64(bounds[0], radix: 16), let high = UInt64(bounds[1], radix: 16) else { return nil }
            return low..<high
        }
    }

    /// Whether anything is mapped in `range`.
    static func anyMapping(in range: Range<UInt64>) throws -> Bool {
        try ranges().contains { $0.overlaps(range) }
    }
}
