import ClosureFormat
import LoaderCore
import LaunchPlan

extension ClosureVerification {
    /// The verdict on the prelinked set at `path` (docs/prelinked.md): ownership, header,
    /// checksum and metadata; the data's hash; the closure it keeps, consistent; every slide
    /// run inside a writable segment of the range and pointing into it, and its page index
    /// the one the runs call for; placed under its app's name; every source image unchanged.
    /// With `trustKey`, the set must be signed by it, and the data is checked against the
    /// signed SHA-256.
    static func verifyPrelinkedSet(_ path: String, trusting trustKey: ClosureTrustKey?, alwaysHash: Bool) -> (Status, [Problem]) {
        let opened: PrelinkedSetFile.Opened
        do throws(ClosureError) {
            opened = try PrelinkedSetFile.open(path, trusting: trustKey)
            try opened.checkData()
        } catch {
            let (status, problem) = problem(for: error)
            return (status, [problem])
        }
        let set = opened.set
        var corrupt = set.closure.consistencyProblems().map { Problem(kind: .corrupt, message: $0) }
        do throws(ClosureError) {
            try set.checkSlideRuns(path: path)
            let derived = try? FixupPageIndex.derive(rebaseRuns: set.slideRuns, bindRuns: [0])
            if derived != set.slidePageIndex {
                corrupt.append(Problem(kind: .corrupt, message: "the slide runs' page index is not the one the runs call for"))
            }
        } catch {
            corrupt.append(problem(for: error).1)
        }
        guard corrupt.isEmpty else { return (.corrupt, corrupt) }
        let directory = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        let expected = ClosureCache.prelinkedSetPath(
            forClosure: ClosureCache(directory: directory.isEmpty ? "." : directory).closurePath(forApp: set.closure.binding.app, arch: set.closure.arch))
        if expected.split(separator: "/").last != path.split(separator: "/").last {
            return (.misplaced, [Problem(kind: .misplaced, message: "built for \(set.closure.binding.app) (\(set.closure.arch)), "
                + "which the cache names \(expected.split(separator: "/").last ?? "")")])
        }
        var hashed = 0
        do throws(ClosureError) {
            try set.checkSources(setPath: path, builtAt: opened.builtAt, alwaysHash: alwaysHash, hashedImages: &hashed)
        } catch {
            let (status, problem) = problem(for: error)
            return (status, [problem])
        }
        return (.valid, [])
    }
}
