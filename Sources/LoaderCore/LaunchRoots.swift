import LoaderSystem
import MachOReader
import LaunchPlan

/// Which images a launch of one image starts from. An executable is its own root. A dylib or
/// bundle with a host executable (`--host`, or a stub root's) is loaded into it as `dlopen`
/// would: the host first, the main executable for `@executable_path`, ordinal -1 and flat
/// lookups. Without a host, it is loaded alone as the root image.
package enum LaunchRoots {
    /// The roots (host first, if any) for `image`: `host`, else the first of `root`'s ``hostCandidates(root:)`` that exists.
    package static func roots(for image: String, fileType: MachHeader.FileType, root: String?, host: String?) throws(LoadError) -> [String] {
        guard fileType == .bundle || fileType == .dylib else { return [image] }
        if let host {
            guard FileStatus.of(host) != nil else {
                throw .unusable(path: host, reason: "host executable not found")
            }
            return [host, image]
        }
        if let root, let stubHost = hostCandidates(root: root).first(where: { FileStatus.of($0) != nil }) {
            return [stubHost, image]
        }
        return [image]
    }

    /// Where a system root keeps its host executable (a stub root's stub host).
    package static func hostPath(root: String) -> String { root + "/bin/host" }

    /// The name of a stub root's host app bundle (`App.app`) and of its executable.
    package static let appBundleName = "App"

    /// Where a root may keep its host, in order: an iOS app bundle's executable, a macOS one's, `bin/host`.
    package static func hostCandidates(root: String) -> [String] {
        let bundle = "\(root)/\(appBundleName).app"
        return ["\(bundle)/\(appBundleName)", "\(bundle)/Contents/MacOS/\(appBundleName)", hostPath(root: root)]
    }
}
