import Foundation
import LoaderCore
import Testing
import TestSupport

/// `PathResolver.normalize` answers an already-normal path without splitting it; every
/// absolute path over the alphabet `/`, `.`, `a` up to 8 bytes (and some real ones) is
/// normalized as a plain component-by-component reference, written here, does it.
@Suite(.bounded) struct PathNormalizationTests {
    /// The reference: split on `/`, drop empty and `.` components, `..` removes the one before.
    static func reference(_ path: String) -> String {
        var parts: [String] = []
        for part in path.split(separator: "/", omittingEmptySubsequences: false) {
            switch part {
            case "", ".": continue
            case "..": if !parts.isEmpty { parts.removeLast() }
            default: parts.append(String(part))
            }
        }
        return "/" + parts.joined(separator: "/")
    }

    /// Every string of `length` bytes over the alphabet that starts with `/`.
    static func paths(upTo length: Int) -> [String] {
        var all = ["/"], level = ["/"]
        for _ in 1..<length {
            level = level.flatMap { prefix in ["/", ".", "a"].map { prefix + $0 } }
            all += level
        }
        return all
    }

    @Test func normalizeAgreesWithTheReferenceOnEveryShortPath() {
        let paths = Self.paths(upTo: 8) + [
            "/usr/lib/libSystem.B.dylib", "/a/./b", "/a/../b", "/a//b", "/a/b/", "/...", "/a/.b", "/a/..b", "/a/b..",
            "/Frameworks/F1.framework/F1", "/x/y/../../../z",
        ]
        var alreadyNormal = 0
        for path in paths {
            let expected = Self.reference(path)
            #expect(PathResolver.normalize(path) == expected, "\(path)")
            if expected == path { alreadyNormal += 1 }
        }
        // Both kinds were met: paths that are already normal and paths that are not.
        #expect(alreadyNormal > 100 && alreadyNormal < paths.count - 100)
    }

    /// `RealPath.of` (what a launch resolves its app's path with) gives Foundation's answer
    /// for every existing path: through a directory symlink, a file symlink, a relative
    /// symlink, `.` and `..` around them, doubled slashes, a trailing slash, a path relative
    /// to the working directory; and nil where the file does not exist.
    @Test func realPathAgreesWithFoundation() throws {
        // The scratch directory's own path resolved first (a temporary directory may sit behind a symlink).
        let base = FileManager.default.temporaryDirectory.resolvingSymlinksInPath().appendingPathComponent("realpath-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: base) }
        let manager = FileManager.default
        try manager.createDirectory(atPath: base + "/real/sub", withIntermediateDirectories: true)
        #expect(manager.createFile(atPath: base + "/real/sub/app", contents: Data()))
        try manager.createSymbolicLink(atPath: base + "/link", withDestinationPath: base + "/real")
        try manager.createSymbolicLink(atPath: base + "/real/sub/alias", withDestinationPath: "app")
        try manager.createSymbolicLink(atPath: base + "/up", withDestinationPath: "real/sub/..")
        let paths = [
            "/link/sub/app", "/link/sub/alias", "/./link/../real/sub/app", "/link/sub/../sub/alias", "//link//sub/app",
            "/link/sub/", "/up/sub/app", "/up/../link/sub/alias", "/real/sub/app",
        ].map { base + $0 }
        for path in paths {
            let expected = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
            #expect(RealPath.of(path) == expected, "\(path)")
            #expect(expected.hasPrefix(base) && !expected.contains("/link") && !expected.contains("alias"), "\(path) -> \(expected)")
        }
        // Relative to the working directory: up to `/`, then down to the symlink.
        let depth = manager.currentDirectoryPath.split(separator: "/").count
        let relative = String(repeating: "../", count: depth) + base.dropFirst() + "/link/sub/app"
        #expect(RealPath.of(relative) == base + "/real/sub/app")
        #expect(URL(fileURLWithPath: relative).resolvingSymlinksInPath().path == base + "/real/sub/app")
        #expect(RealPath.of(base + "/link/missing") == nil)
        #expect(RealPath.of(base + "/real/sub/app/below") == nil)
    }
}
