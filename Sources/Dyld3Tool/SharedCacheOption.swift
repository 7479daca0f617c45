import LoaderCore
import SharedCacheBuild

/// `--shared-cache auto|none|PATH`, as install, launch and compare spell it: auto is the
/// root's cache for the architecture when it has one, none no cache, else the cache's path.
enum SharedCacheOption {
    /// The cache `value` names for a launch of `arch` under `root`, nil for none.
    static func path(_ value: String, root: String?, arch: String) -> String? {
        switch value {
        case "none": return nil
        case "auto": return root.flatMap { SharedCacheBuilder.cachePath(root: $0, arch: arch) }
        default: return PathResolver.normalize(value)
        }
    }

    /// What a dyld2 launch takes its dylibs from: the cache `value` names, its copy slid for
    /// the boot kept with the closures in `closureDirectory`; a cache that cannot be used is
    /// the launch's failure when it was named, left for the files under auto.
    static func request(_ value: String, root: String?, arch: String, closureDirectory: String) -> SharedCacheRequest? {
        path(value, root: root, arch: arch).map { SharedCacheRequest(path: $0, slidCopyDirectory: closureDirectory, required: value != "auto") }
    }
}
