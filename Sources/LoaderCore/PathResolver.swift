import Foundation

/// Turns an install name into candidate paths as dyld does: `@executable_path`, `@loader_path`,
/// `@rpath` over the loading chain's rpaths, absolute paths under the root, the root's `/usr/lib` last.
package struct PathResolver: Sendable {
    /// The system root absolute install names are looked up under (dyld's root path).
    package let root: String?
    /// The directory of the main executable (`@executable_path`).
    package let executableDirectory: String

    package init(root: String?, executablePath: String) {
        self.root = root.map { PathResolver.normalize($0) }
        self.executableDirectory = PathResolver.directory(of: executablePath)
    }

    /// An rpath as declared, with the declaring image's directory (its `@loader_path`).
    package struct RPath: Equatable, Sendable {
        package let path: String
        package let declaringImageDirectory: String
        package init(path: String, declaringImageDirectory: String) {
            self.path = path
            self.declaringImageDirectory = declaringImageDirectory
        }
    }

    /// Candidate paths for `installName`, in the order dyld tries them. `loaderDirectory`: the
    /// naming image's directory; `rpaths`: the loading chain's, the requester's first.
    package func candidates(for installName: String, loaderDirectory: String, rpaths: [RPath]) -> [String] {
        var paths: [String] = []
        if installName.hasPrefix("@rpath/") {
            let rest = String(installName.dropFirst("@rpath/".count))
            for rpath in rpaths {
                let expanded = expand(rpath.path, loaderDirectory: rpath.declaringImageDirectory)
                paths.append(confined(expanded + "/" + rest))
            }
        } else if installName.hasPrefix("@") {
            paths.append(confined(expand(installName, loaderDirectory: loaderDirectory)))
        } else {
            paths.append(underRoot(installName))
        }
        // DYLD_FALLBACK_LIBRARY_PATH's last entry: the root's /usr/lib, by leaf name.
        let leaf = (installName as NSString).lastPathComponent
        let fallback = underRoot("/usr/lib/" + leaf)
        if !paths.contains(fallback) { paths.append(fallback) }
        var seen = Set<String>()
        return paths.filter { seen.insert($0).inserted }
    }

    /// The file a `dlopen` path names without a search (`@loader_path` is the main executable's
    /// directory); nil for `@rpath` and relative paths.
    package func direct(_ path: String) -> String? {
        if path.hasPrefix("@rpath/") { return nil }
        if path.hasPrefix("@") { return confined(expand(path, loaderDirectory: executableDirectory)) }
        return path.hasPrefix("/") ? underRoot(path) : nil
    }

    /// `@executable_path` and `@loader_path` expanded; absolute paths put under the root.
    func expand(_ path: String, loaderDirectory: String) -> String {
        if path.hasPrefix("@executable_path") {
            return executableDirectory + String(path.dropFirst("@executable_path".count))
        }
        if path.hasPrefix("@loader_path") {
            return loaderDirectory + String(path.dropFirst("@loader_path".count))
        }
        return path.hasPrefix("/") ? underRoot(path) : path
    }

    /// An absolute path inside the system root (unchanged without a root): `..` stops at
    /// the root, as if the root were `/`.
    func underRoot(_ path: String) -> String {
        guard let root, root != "/" else { return PathResolver.normalize(path) }
        return root + PathResolver.normalize("/" + path)
    }

    /// `path` normalized; one inside the root stays inside it (symlinks resolve there when read).
    func confined(_ path: String) -> String {
        guard let root, let inside = PathResolver.relative(path, inside: root) else { return PathResolver.normalize(path) }
        return underRoot(inside)
    }

    /// `path` relative to `root` (starting with `/`) when inside it, else nil; `..` is the caller's to clamp.
    package static func relative(_ path: String, inside root: String) -> String? {
        guard root != "/" else { return nil }
        if path == root { return "/" }
        guard path.hasPrefix(root + "/") else { return nil }
        return String(path.dropFirst(root.count))
    }

    package static func directory(of path: String) -> String {
        containingDirectory(of: normalize(path))
    }

    /// The directory `path` names its file in, as written (nothing normalized or resolved):
    /// `/` for `/name`, `.` for a bare `name`. No generic string algorithm: a launch asks it
    /// of its closure's path.
    package static func containingDirectory(of path: String) -> String {
        let utf8 = path.utf8
        guard let slash = utf8.lastIndex(of: UInt8(ascii: "/")) else { return "." }
        return slash == utf8.startIndex ? "/" : String(path[..<slash])
    }

    /// An absolute path with `.`, `..` and doubled slashes removed (symlinks are kept).
    package static func normalize(_ path: String) -> String {
        if isNormalized(path) { return path }
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        // One pass over the bytes, each kept component appended as "/name" and dropped again
        // by a `..` (no substrings, no generic `joined`, which a launch would meet first here).
        let slash = UInt8(ascii: "/"), dot = UInt8(ascii: ".")
        let bytes = Array(absolute.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var starts: [Int] = []
        var index = 0
        while index < bytes.count {
            while index < bytes.count && bytes[index] == slash { index += 1 }
            let start = index
            while index < bytes.count && bytes[index] != slash { index += 1 }
            let length = index - start
            if length == 0 || (length == 1 && bytes[start] == dot) { continue }
            if length == 2 && bytes[start] == dot && bytes[start + 1] == dot {
                if let last = starts.popLast() { out.removeLast(out.count - last) }
                continue
            }
            starts.append(out.count)
            out.append(slash)
            out.append(contentsOf: bytes[start..<index])
        }
        return out.isEmpty ? "/" : String(decoding: out, as: UTF8.self)
    }

    /// Whether ``normalize(_:)`` would leave `path` as it is (absolute, no empty, `.` or `..`
    /// component): most paths a launch resolves are, and one pass spares splitting them.
    static func isNormalized(_ path: String) -> Bool {
        var utf8 = path.utf8.makeIterator()
        guard utf8.next() == UInt8(ascii: "/") else { return false }
        if path.utf8.count == 1 { return true }
        // Length of the current component and whether it is all dots so far.
        var length = 0, dots = 0
        while let byte = utf8.next() {
            if byte == UInt8(ascii: "/") {
                if length == 0 || (dots == length && length <= 2) { return false }
                length = 0
                dots = 0
            } else {
                length += 1
                if byte == UInt8(ascii: ".") { dots += 1 }
            }
        }
        return length != 0 && !(dots == length && length <= 2)
    }
}
