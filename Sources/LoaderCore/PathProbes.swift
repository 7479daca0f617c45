import LoaderSystem

/// What one launch's path search has asked the file system, so no path or search directory
/// is probed twice, and which rpath directories are absent (so are their candidates, unprobed):
/// a 2,000-deep `@rpath` chain adding an absent rpath each costs a few probes per image, not
/// one per image per ancestor.
struct PathProbes {
    /// `stat` calls made so far.
    private(set) var count = 0
    private var answers: [String: Bool] = [:]
    /// Search directories by id, and whether each is known absent.
    private var directoryIDs: [String: Int] = [:]
    private var directoryPaths: [String] = []
    private var directoryAbsent: [Bool] = []

    /// Whether something exists at `path` (symlinks followed), probed at most once.
    mutating func exists(_ path: String) -> Bool {
        if let known = answers[path] { return known }
        count += 1
        let found = FileStatus.of(path) != nil
        answers[path] = found
        return found
    }

    /// The id of the (normalized) search directory `path`.
    mutating func directoryID(_ path: String) -> Int {
        if let id = directoryIDs[path] { return id }
        directoryIDs[path] = directoryPaths.count
        directoryPaths.append(path)
        directoryAbsent.append(false)
        return directoryPaths.count - 1
    }

    func isKnownAbsent(_ id: Int) -> Bool { directoryAbsent[id] }

    /// After a candidate under directory `id` was absent: the directory's path when it is
    /// absent too, probed once (nil when present or already known).
    mutating func settleAbsentDirectory(_ id: Int) -> String? {
        let path = directoryPaths[id]
        guard answers[path] == nil else { return nil }
        guard !exists(path) else { return nil }
        directoryAbsent[id] = true
        return path
    }
}
