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

