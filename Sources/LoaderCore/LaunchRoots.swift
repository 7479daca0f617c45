import Foundation
import MachOReader
import LaunchPlan

/// Which images a launch of one image starts from. An executable is its own root. A dylib
/// or a bundle given with a host executable (`--host`, or a stub root's `bin/host`) is
/// loaded into it the way `dlopen` loads it into a running process: the host first, then
/// the image, so the host is the main executable for `@executable_path` and ordinal -1, and
/// flat-namespace lookups search it (and everything it loads) as dyld's do for a dlopen'ed
/// image. Without a host, a dylib or bundle is loaded alone as the root image.
public enum LaunchRoots {
    /// The launch roots (host first, if any) for `image`, whose type is `fileType`: the
    /// `host` given, else the first of `root`'s ``hostCandidates(root:)`` that exists.
    public static func roots(for image: String, fileType: MachHeader.FileType, root: String?, host: String?) throws(LoadError) -> [String] {
        guard fileType == .bundle || fileType == .dylib else { return [image] }
        if let host {
            guard FileManager.default.fileExists(atPath: host) else {
                throw .unusable(path: host, reason: "host executable not found")
            }
            return [host, image]
        }
        if let root, let stubHost = hostCandidates(root: root).first(where: { FileManager.default.fileExists(atPath: $0) }) {
            return [stubHost, image]
        }
        return [image]
    }

    /// Where a system root keeps its host executable (a stub root's stub host).
    public static func hostPath(root: String) -> String { root + "/bin/host" }

    /// The name of the app bundle a stub root lays its host out as (`App.app`), which is
    /// also its executable's.
    public static let appBundleName = "App"

    /// Where a root may keep its host, in the order they are looked for: an iOS app
    /// bundle's executable (`App.app/App`), a macOS one's (`App.app/Contents/MacOS/App`),
    /// then `bin/host`.
    public static func hostCandidates(root: String) -> [String] {
        let bundle = "\(root)/\(appBundleName).app"
        return ["\(bundle)/\(appBundleName)", "\(bundle)/Contents/MacOS/\(appBundleName)", hostPath(root: root)]
    }
}
