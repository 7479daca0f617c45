import ClosureBuild
import LaunchClosure
import ClosureFormat

extension FixtureApp {
    /// The app's closure, built as `dyld3 install` builds it.
    package func closure(contentOnly: Bool = false) throws -> LaunchClosure {
        try ClosureBuilder.build(roots: [executable], arch: arch, root: root, contentOnlyIdentity: contentOnly)
    }

    /// Builds the app's closure and writes it into `cache`; returns its path.
    @discardableResult
    package func install(into cache: String, contentOnly: Bool = false) throws -> String {
        let store = ClosureCache(directory: cache)
        try store.prepareForWriting()
        let path = store.closurePath(forApp: executable, arch: arch)
        try ClosureFile.write(try closure(contentOnly: contentOnly), to: path)
        return path
    }
}
