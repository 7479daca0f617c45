import Foundation
import LoaderCore
import LaunchPlan
import ClosureFormat
import LoaderSystem

/// The closure cache: one file per app and architecture, named by a hash of the app's
/// real path, in `cache/` at the project root unless `--cache` or `DYLD3_CACHE` says otherwise.
package struct ClosureCache: Sendable {
    package static let fileExtension = "dyld3closure"
    package let directory: String

    package init(directory: String) {
        self.directory = PathResolver.normalize(directory)
    }

    /// `--cache`, else `$DYLD3_CACHE`, else `cache/` in the current directory.
    package static func resolve(_ option: String?) -> ClosureCache {
        ClosureCache(directory: option ?? ProcessInfo.processInfo.environment["DYLD3_CACHE"] ?? "cache")
    }

    /// The closure path for the app whose main image is `appPath`, for `arch`.
    package func closurePath(forApp appPath: String, arch: String) -> String {
        let real = ClosureBinding.resolved(appPath)
        let key = UnsafeHash.xxh3(Array(real.utf8))
        return directory + "/" + String(key, radix: 16).leftPadded(to: 16) + "-" + arch + "." + ClosureCache.fileExtension
    }

    /// Fails with a clear error unless the cache directory exists (or can be created) and is writable.
    package func prepareForWriting() throws(ClosureError) {
        let status = FileStatus.of(directory)
        if status == nil {
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            } catch {
                throw .writeFailed(path: directory, what: "cannot create the cache directory: \(error.localizedDescription)")
            }
        } else if status?.isDirectory != true {
            throw .writeFailed(path: directory, what: "the cache path is not a directory")
        }
        guard FileManager.default.isWritableFile(atPath: directory) else {
            throw .writeFailed(path: directory, what: "the cache directory is not writable")
        }
        removeAbandonedWrites()
    }

    /// Checks that launches by this user would trust closures written here; why they would
    /// refuse every one of them otherwise (the directory's owner or mode, ``ClosureOwnership``).
    /// A directory that does not exist yet passes.
    package func checkTrust() -> ClosureOwnership.Problem? {
        guard let status = FileStatus.of(directory) else { return nil }
        let own = FileStatus(size: 0, mode: 0o100444, ownerID: UnsafeFileIO.effectiveUserID)
        return ClosureOwnership.check(file: own, directory: status, user: UnsafeFileIO.effectiveUserID)
            ?? ClosureOwnership.checkAncestors(of: directory, user: UnsafeFileIO.effectiveUserID)
    }

    /// Removes temporary files (`.<name>.tmp.<pid>.<random>`) left by writers that died
    /// before renaming them (SIGKILL, power loss); a live writer's file is kept. They are
    /// never read as closures (`files()` skips dot files), this only reclaims the space.
    package func removeAbandonedWrites() {
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] where name.hasPrefix(".") {
            let parts = name.split(separator: ".")
            guard parts.count >= 4, parts[parts.count - 3] == "tmp", let pid = Int32(parts[parts.count - 2]),
                  !UnsafeFileIO.processExists(pid) else { continue }
            try? FileManager.default.removeItem(atPath: directory + "/" + name)
        }
    }

    /// Every file in the cache directory, closures and others, sorted.
    package func files() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
            .filter { !$0.hasPrefix(".") }.sorted().map { directory + "/" + $0 }
    }
}

extension String {
    /// Zeros before `self` up to `width` characters.
    package func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
