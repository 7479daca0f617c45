import ClosureFormat
import Foundation
import LoaderCore

extension ClosureBinding {
    /// The binding a launch of `roots` (host first, if any) for `arch` under `root` asks for.
    public init(request roots: [String], arch: String, root: String?) {
        self.init(arch: arch, root: root.map(PathResolver.normalize) ?? "",
                  app: ClosureBinding.resolved(roots.last ?? ""),
                  host: roots.count > 1 ? ClosureBinding.resolved(roots[0]) : "")
    }

    /// `path` made absolute with symlinks resolved: the form bindings and cache names use.
    /// `realpath` for a file that exists (every launch asks this: one libc call); Foundation's
    /// resolution, which keeps what does not exist, for one that does not (the two agree
    /// wherever both answer).
    public static func resolved(_ path: String) -> String {
        RealPath.of(path) ?? URL(fileURLWithPath: path).resolvingSymlinksInPath().path
    }
}
