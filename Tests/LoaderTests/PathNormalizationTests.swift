import LoaderCore
import Testing

/// `PathResolver.normalize` answers an already-normal path without splitting it; every
/// absolute path over the alphabet `/`, `.`, `a` up to 8 bytes (and some real ones) is
/// normalized as a plain component-by-component reference, written here, does it.
@Suite struct PathNormalizationTests {
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
}
