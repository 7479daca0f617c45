import Foundation
import ClosureCache
import LoaderCore
import TestSupport
import Testing
import ClosureFormat

extension FixtureApp {
    /// The manifest's result; fails for apps expected not to launch.
    var expectedResult: Int32 {
        get throws {
            guard case let .result(value, _) = expectation else { throw FixtureError("\(self) does not launch") }
            return value
        }
    }
}

