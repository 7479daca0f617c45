import ClosureBuild
import ClosureCache
import ClosureFormat
import LoaderCore

extension FixtureApp {
    /// The app's closure, built as `dyld3 install` builds it, with the dlopen closure of the
    /// path its manifest says main opens (`--dlopen`) unless `dlopenClosures` is off.
    package func closure(contentOnly: Bool = false, dlopenClosures: Bool = true) throws -> LaunchClosure {
        var closure = try ClosureBuilder.build(roots: [executable], arch: arch, root: root, contentOnlyIdentity: contentOnly)
        if dlopenClosures, let dlopen,
           case let .closure(record) = try DlopenClosureBuilder.build(dlopen.path, request: LaunchOptions(roots: [executable], arch: arch, root: root),
                                                       launch: closure, loaded: closure.images) {
            closure.dlopens.append(record)
        }
        return closure
    }

    /// Builds the app's closure and writes it into `cache`; returns its path.
    @discardableResult
    package func install(into cache: String, contentOnly: Bool = false, dlopenClosures: Bool = true) throws -> String {
        let store = ClosureCache(directory: cache)
        try store.prepareForWriting()
        let path = store.closurePath(forApp: executable, arch: arch)
        try ClosureFile.write(try closure(contentOnly: contentOnly, dlopenClosures: dlopenClosures), to: path)
        return path
    }
}
