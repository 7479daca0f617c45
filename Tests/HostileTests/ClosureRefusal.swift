import ClosureCache
import ClosureFormat
import Dyld3
import LaunchPlan
import LoaderCore
import Testing
import TestSupport

/// How a forged closure file is refused, for the checks the hostile suites make of it.
enum ClosureRefusal {
    /// What reading the closure at `path` throws, when it is `.corrupt`; nil, with an issue
    /// recorded, when it reads or throws another error.
    static func corruption(_ path: String, sourceLocation: SourceLocation = #_sourceLocation) -> (path: String, offset: Int, what: String)? {
        do {
            _ = try ClosureFile.read(path)
            Issue.record("\(path): read", sourceLocation: sourceLocation)
        } catch {
            if case let .corrupt(closurePath, offset, what) = error { return (closurePath, offset, what) }
            Issue.record("\(path): \(error)", sourceLocation: sourceLocation)
        }
        return nil
    }

    /// What the fast path throws launching `app` (no code run) from the closure at `path`;
    /// nil, with an issue recorded, when it launches or throws something else.
    static func launchError(_ app: FixtureApp, closurePath path: String, sourceLocation: SourceLocation = #_sourceLocation) -> ClosureError? {
        do {
            let launch = try FastPath.launch(closurePath: path, request: LaunchOptions(roots: [app.executable], arch: app.arch, root: app.root, run: false))
            launch.memory.release()
            Issue.record("\(path): launched", sourceLocation: sourceLocation)
        } catch let error as ClosureError {
            return error
        } catch {
            Issue.record("\(path): \(error)", sourceLocation: sourceLocation)
        }
        return nil
    }

    /// `auto`'s launch of `app` (`result`) fell back to dyld2 for a reason `isExpected` accepts
    /// and returned the app's own result.
    static func expectFallback(_ result: Dyld3Binary.Result, of app: FixtureApp, sourceLocation: SourceLocation = #_sourceLocation,
                               reason isExpected: (String) -> Bool) throws {
        #expect(result.status == 0, "status \(result.status) (139: SIGSEGV): \(result.stderr)", sourceLocation: sourceLocation)
        let reason = result.json?["fallback_reason"] as? String
        #expect(reason.map(isExpected) == true, "\(reason ?? result.stdout)", sourceLocation: sourceLocation)
        #expect((result.json?["result"] as? Int).map(Int32.init) == (try app.expectedResult), sourceLocation: sourceLocation)
    }
}
