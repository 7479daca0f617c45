import ClosureFormat
import LoaderCore
import LaunchPlan
import MachOReader

extension ClosureVerification {
    /// The verdict on the prelinked set at `path` (docs/prelinked.md): ownership, header,
    /// checksum and metadata (with `trustKey`, signed by it, the data checked against the signed
    /// SHA-256); the data's hash; the closure it keeps, consistent; every slide run inside a
    /// writable segment of the range and pointing into it, its page index the one the runs call
    /// for; placed under its app's name; every source image unchanged, and the shared cache it
    /// binds into the one it was built over.
    static func verifyPrelinkedSet(_ path: String, trusting trustKey: ClosureTrustKey?, alwaysHash: Bool) -> Verdict {
        let opened: PrelinkedSetFile.Opened
        do throws(ClosureError) {
            opened = try PrelinkedSetFile.open(path, trusting: trustKey)
            try opened.checkData()
        } catch {
            return failed(problem(for: error))
        }
        let set = opened.set
        var corrupt = set.closure.consistencyProblems().map { Problem(kind: .corrupt, message: $0) }
        do throws(ClosureError) {
            try set.checkSlideRuns(path: path)
            if (try? FixupPageIndex.derive(rebaseRuns: set.slideRuns, bindRuns: [0])) != set.slidePageIndex {
                corrupt.append(Problem(kind: .corrupt, message: "the slide runs' page index is not the one the runs call for"))
            }
        } catch {
            corrupt.append(problem(for: error))
        }
        guard corrupt.isEmpty else { return (.corrupt, corrupt) }
        let misplaced = placementProblems(set.closure, path: path, name: ClosureCache.prelinkedSetPath(forClosure:))
        guard misplaced.isEmpty else { return (.misplaced, misplaced) }
        if let cache = set.closure.sharedCache, let stale = set.closure.sharedCacheStaleness() {
            return failed(.stale, "\(cache.path) \(stale)")
        }
        var hashed = 0
        return verdict { () throws(ClosureError) in
            try set.checkSources(setPath: path, builtAt: opened.builtAt, alwaysHash: alwaysHash, hashedImages: &hashed)
        }
    }

    /// The verdict of `check`: valid, or the problem its error is.
    static func verdict(of check: () throws(ClosureError) -> Void) -> Verdict {
        do throws(ClosureError) {
            try check()
            return (.valid, [])
        } catch {
            return failed(problem(for: error))
        }
    }

    /// A shared cache slid for a boot: its header and data hash; a copy slid for another boot
    /// is stale (the next launch writes it again).
    static func verifySlidCache(_ path: String) -> Verdict {
        guard case let .success(file) = UnsafeFileIO.openNoFollow(path) else { return failed(.corrupt, "cannot be opened") }
        let fields = file.read(offset: 0, count: SlidPrelinkedSetHeader.size)
        guard fields.count == SlidPrelinkedSetHeader.size else { return failed(.corrupt, "is shorter than its header") }
        let word = fields.littleEndianWord
        let dataOffset = word(72)
        guard dataOffset <= file.status.size else { return failed(.corrupt, "its data offset is past its end") }
        return verdict { () throws(ClosureError) in
            try SlidPrelinkedSetFile.open(path, setChecksum: word(24), setDataHash: word(32), rangeSize: file.status.size - dataOffset).get().checkData()
        }
    }

    /// The verdict on the copy slid for a boot at `path` (``SlidPrelinkedSetFile``): its set
    /// beside it opens; ownership, header and checksum; a copy of that set, for this boot
    /// (another boot's copy is stale: the next launch writes it again); its protection runs
    /// the ones the set's plans call for; its data the set's data slid to its base.
    static func verifySlidSet(_ path: String) -> Verdict {
        let setPath = ClosureCache.sibling(of: path, extension: ClosureCache.slidSetExtension, as: ClosureCache.prelinkedSetExtension)
        let opened: PrelinkedSetFile.Opened
        do throws(ClosureError) {
            opened = try PrelinkedSetFile.open(setPath)
        } catch {
            return failed(.stale, "its prelinked set \(setPath) cannot be used: \(error)")
        }
        return verdict { () throws(ClosureError) in
            // The protection runs are checked against the set's plans as the copy is opened.
            let copy = try SlidPrelinkedSetFile.open(path, for: opened).get()
            try copy.checkData()
            try opened.set.checkSlideRuns(path: setPath)
            let expected = try opened.set.slid(try opened.data(), to: copy.header.base, path: setPath)
            guard UnsafeHash.xxh3(expected) == copy.header.dataHash else {
                throw ClosureError.corrupt(path: path, offset: Int(copy.header.dataOffset),
                                           what: "the data is not its set's data slid to \(hex(copy.header.base))")
            }
        }
    }
}
