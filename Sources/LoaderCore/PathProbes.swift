import Foundation

/// What one launch's path search has asked the file system, remembered so that no path and
/// no search directory is probed twice: each `stat` answer (present or absent) by path, and
/// which rpath directories are known to be absent (every candidate under an absent directory
/// is absent without a probe). A 2,000-deep `@rpath` chain whose images each add an absent
/// rpath then costs a few probes per image instead of one per image per ancestor.
struct PathProbes {
    /// `stat` calls made so far (files and directories).
    private(set) var count = 0
    private var answers: [String: Bool] = [:]
    /// Search directories by id (`directoryID(_:)`), and whether each is known absent.
    private var directoryIDs: [String: Int] = [:]
    private var directoryPaths: [String] = []
    private var directoryAbsent: [Bool] = []

    /// Whether something exists at `path` (symlinks followed), probed at most once.
    mutating func exists(_ path: String) -> Bool {
        if let known = answers[path] { return known }
        count += 1
        let found = FileManager.default.fileExists(atPath: path)
        answers[path] = found
        return found
    }

    /// A small integer naming the search directory `path` (already normalized).
    mutating func directoryID(_ path: String) -> Int {
        if let id = directoryIDs[path] { return id }
        directoryIDs[path] = directoryPaths.count
        directoryPaths.append(path)
        directoryAbsent.append(false)
        return directoryPaths.count - 1
    }

    /// Whether directory `id` was probed and found absent.
    func isKnownAbsent(_ id: Int) -> Bool { directoryAbsent[id] }

    /// After a candidate under directory `id` was absent: probes the directory itself once
    /// and returns its path when it is absent too (nil when present or already known).
    mutating func settleAbsentDirectory(_ id: Int) -> String? {
        let path = directoryPaths[id]
        guard answers[path] == nil else { return nil }
        guard !exists(path) else { return nil }
        directoryAbsent[id] = true
        return path
    }
}
