import LaunchPlan

/// How `dyld3 bench --cold` empties the page cache before each cold sample.
package enum EvictionMethod: String, Codable, Sendable, CaseIterable {
    /// `echo 3 > /proc/sys/vm/drop_caches`: every clean page-cache page of the
    /// machine, dentries and inodes too (so path lookups and `stat` are cold as well). Root only.
    case dropCaches = "drop_caches"
    /// `posix_fadvise(POSIX_FADV_DONTNEED)` on each file the path will touch: those files'
    /// clean pages only; their dentries and inodes stay cached.
    case fadvise = "posix_fadvise"

    /// The method `--cold` uses: the one requested, else `drop_caches` when this process may
    /// write it (root with a writable /proc/sys; `dropCachesWritable` when given), else
    /// `posix_fadvise`. Asking for `drop_caches` without the right to write it is an error,
    /// not a silent downgrade.
    package static func choose(requested: EvictionMethod?, dropCachesWritable: Bool? = nil) throws(CommandFailure) -> EvictionMethod {
        let dropCachesWritable = dropCachesWritable ?? PageCache.dropCachesWritable
        switch requested {
        case .dropCaches?:
            guard dropCachesWritable else { throw .failed("--evict drop_caches: \(PageCache.dropCachesPath) is not writable (run as root)") }
            return .dropCaches
        case .fadvise?: return .fadvise
        case nil: return dropCachesWritable ? .dropCaches : .fadvise
        }
    }

    /// What the method evicts, for the report.
    package var explanation: String {
        switch self {
        case .dropCaches: "`echo 3 > /proc/sys/vm/drop_caches` (root): the whole page cache, dentries and inodes"
        case .fadvise: "`posix_fadvise(POSIX_FADV_DONTNEED)` on each file the path touches: their cached pages only"
        }
    }
}

/// The page cache, as the cold samples need it: evict files, and count what stayed.
/// (The system calls are in ``UnsafePageCache``.)
enum PageCache {
    static let dropCachesPath = "/proc/sys/vm/drop_caches"

    /// Whether this process may write `drop_caches`.
    static var dropCachesWritable: Bool { UnsafePageCache.isWritable(dropCachesPath) }

    /// Empties the page cache of `files` (``EvictionMethod/fadvise``) or of everything
    /// (``EvictionMethod/dropCaches``). Pages still mapped by a process stay: evict after
    /// the previous launch was unmapped.
    static func evict(_ files: [String], method: EvictionMethod) throws(CommandFailure) {
        switch method {
        case .dropCaches:
            if let error = UnsafePageCache.write("3\n", to: dropCachesPath) { throw .systemCall(path: dropCachesPath, what: "cannot be written", errno: error) }
        case .fadvise:
            for file in files {
                if let error = UnsafePageCache.adviseDontNeed(file) { throw .systemCall(path: file, what: "posix_fadvise failed", errno: error) }
            }
        }
    }

    /// Pages of `files` in the page cache (mincore over a read-only mapping; reads nothing),
    /// and their total pages.
    static func residentPages(_ files: [String]) throws(CommandFailure) -> ResidentPages {
        var pages = ResidentPages(resident: 0, total: 0)
        for file in files {
            guard let counted = UnsafePageCache.residentPages(file) else { throw .failed("\(file): cannot be mapped to count resident pages") }
            pages.resident += counted.resident
            pages.total += counted.total
        }
        return pages
    }
}
