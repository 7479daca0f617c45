import ClosureCache
import ClosureFormat
import Foundation
import LaunchPlan
import LoaderCore
import LoaderSystem
import RuntimeServices

/// What dyld3 did with the closures it built in process: keeps them. A dlopen closure built at
/// run time against the launch's own images is added to the launch closure, so the next launch
/// `dlopen`s through it as through one `install --dlopen` built. Only an unsigned closure in a
/// cache this process may write (the closures' ownership rule) is rewritten, atomically; a
/// signed one is left as it is (its signer adds them: `install --dlopen`).
package enum DlopenClosureKeeping {
    /// Adds the dlopen closures `launch` built at run time to the closure at `closurePath`;
    /// how many it added (0 when there were none, or the closure is signed or cannot be written).
    @discardableResult
    package static func keep(_ launch: Launch, closurePath: String) -> Int {
        guard let loader = launch.memory.dynamicLoader?.loader as? ClosureDynamicLoader, !loader.builtForLaunch.isEmpty,
              !ClosureFile.isSigned(closurePath), var closure = try? ClosureFile.read(closurePath) else { return 0 }
        let unkept = loader.builtForLaunch.filter { built in !closure.dlopens.contains { $0.requested == built.requested } }
        guard !unkept.isEmpty else { return 0 }
        var added: [ClosureDlopen] = []
        for built in unkept {
            guard let record = try? built.closure.encoded() else { return 0 }
            added.append(record)
        }
        closure.dlopens += added
        // The file keeps its modification time: when an image's identity is racy (changed in
        // the second the closure was written) is judged against the install, not this rewrite.
        guard let written = FileStatus.of(closurePath) else { return 0 }
        do throws(ClosureError) {
            try ClosureFile.checkTrust(closurePath)
            try ClosureFile.write(closure, to: closurePath)
        } catch {
            return 0
        }
        let modified = Date(timeIntervalSince1970: Double(written.mtimeSeconds) + Double(written.mtimeNanoseconds) / 1e9)
        try? FileManager.default.setAttributes([.modificationDate: modified], ofItemAtPath: closurePath)
        return added.count
    }
}
