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

extension ClosureVerification {
    /// The verdict on the copy slid for a boot at `path` (``SlidPrelinkedSetFile``): its set
    /// beside it opens; ownership, header and checksum; a copy of that set, for this boot
    /// (another boot's copy is stale: the next launch writes it again); its protection runs
    /// the ones the set's plans call for; and its data the set's data slid to its base,
    /// recomputed from the set.
    static func verifySlidSet(_ path: String) -> (Status, [Problem]) {
        let setPath = ClosureCache.sibling(of: path, extension: ClosureCache.slidSetExtension, as: ClosureCache.prelinkedSetExtension)
        let opened: PrelinkedSetFile.Opened
        do throws(ClosureError) {
            opened = try PrelinkedSetFile.open(setPath)
        } catch {
            return (.stale, [Problem(kind: .stale, message: "its prelinked set \(setPath) cannot be used: \(error)")])
        }
        let copy: SlidPrelinkedSetFile.Opened
        switch SlidPrelinkedSetFile.open(path, for: opened) {
        case let .success(found): copy = found
        case .failure(.noSlidCopy): return (.corrupt, [Problem(kind: .corrupt, message: "vanished while it was being verified")])
        case let .failure(error):
            let (status, problem) = problem(for: error)
            return (status, [problem])
        }
        do throws(ClosureError) {
            // The protection runs were checked against the set's plans as it was opened.
            try copy.checkData()
            try opened.set.checkSlideRuns(path: setPath)
            let expected = try opened.set.slid(try opened.data(), to: copy.header.base, path: setPath)
            guard UnsafeHash.xxh3(expected) == copy.header.dataHash else {
                throw ClosureError.corrupt(path: path, offset: Int(copy.header.dataOffset),
                                           what: "the data is not its set's data slid to 0x\(String(copy.header.base, radix: 16))")
            }
        } catch {
            let (status, problem) = problem(for: error)
            return (status, [problem])
        }
        return (.valid, [])
    }
}
