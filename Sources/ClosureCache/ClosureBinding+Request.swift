import ClosureFormat
import Foundation
import LoaderCore
import LaunchPlan

extension ClosureBinding {
    /// The binding a launch of `roots` (host first, if any) with the `inserted` libraries
    /// for `arch` under `root`, with signature policy `policy`, asks for. `recorded`: the
    /// binding of the closure it is held to. A path the request names exactly as the closure
    /// recorded it (resolved when it was built) is taken without a `realpath`: a component
    /// replaced by a link since then moves the files the closure names, and their identity
    /// checks refuse them.
    package init(request roots: [String], inserted: [String] = [], arch: String, root: String?, policy: SigningPolicy = .default,
                 recorded: ClosureBinding? = nil) {
        func resolved(_ path: String, _ known: String?) -> String { path == known ? path : ClosureBinding.resolved(path) }
        let knownInserted = inserted.isEmpty ? [] : recorded?.insertedPaths ?? []
        self.init(arch: arch, root: root.map(PathResolver.normalize) ?? "",
                  app: resolved(roots.last ?? "", recorded?.app),
                  host: roots.count > 1 ? resolved(roots[0], recorded?.host) : "",
                  inserted: inserted.isEmpty ? "" : inserted.indices.map {
                      resolved(inserted[$0], $0 < knownInserted.count ? knownInserted[$0] : nil)
                  }.joined(separator: ":"), policy: policy)
    }

    /// `path` made absolute with symlinks resolved, as bindings and cache names use it:
    /// `realpath` for a file that exists, else Foundation's resolution (which keeps what does not).
    package static func resolved(_ path: String) -> String {
        RealPath.of(path) ?? URL(fileURLWithPath: path).resolvingSymlinksInPath().path
    }
}

extension ClosureBinding {
    /// The binding's app, host and inserted libraries must be the files the image list maps
    /// in their places, symlinks resolved: else the binding was edited apart from the images,
    /// and a launch would run another app's images under this app's name.
    package func checkRoots(of images: [ClosureImage], rootCount: Int, closurePath: String) throws(ClosureError) {
        guard rootCount >= 1, rootCount <= images.count else { return }
        var pairs = [(role: "main image", field: "app", bound: app, image: images[rootCount - 1].path)]
        if rootCount == 2 { pairs.append((role: "host image", field: "host", bound: host, image: images[0].path)) }
        let inserted = insertedPaths
        guard rootCount + inserted.count <= images.count else {
            throw .corrupt(path: closurePath, offset: 0, what: "the binding names \(inserted.count) inserted libraries after \(rootCount) roots, and the closure has \(images.count) images")
        }
        for (number, path) in inserted.enumerated() {
            pairs.append((role: "inserted image", field: "inserted", bound: path, image: images[rootCount + number].path))
        }
        for pair in pairs where pair.image != pair.bound && ClosureBinding.resolved(pair.image) != pair.bound {
            throw .corrupt(path: closurePath, offset: 0,
                           what: "the \(pair.role) \(pair.image) is not the \(pair.field) the binding names (\(pair.bound.isEmpty ? "none" : pair.bound)): the closure's fields disagree")
        }
    }
}

extension ClosureImageTable {
    /// ``ClosureBinding/checkRoots(of:rootCount:closurePath:)`` of this table.
    package func checkRoots(closurePath: String) throws(ClosureError) {
        try binding.checkRoots(of: images, rootCount: rootCount, closurePath: closurePath)
    }
}

extension LaunchClosure {
    /// ``ClosureBinding/checkRoots(of:rootCount:closurePath:)`` of this closure.
    package func checkRoots(closurePath: String) throws(ClosureError) {
        try binding.checkRoots(of: images, rootCount: rootCount, closurePath: closurePath)
    }
}
