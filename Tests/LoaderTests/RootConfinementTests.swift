import Foundation
import LoaderCore
import MachOReader
import TestSupport
import Testing
import LaunchPlan

/// Under `--root R`, every file the loader opens for an install name, an rpath or an
/// `@`-path that lies in R stays in R: `..` stops at R and symlinks resolve as if R were `/`.
/// The trees are built in a temporary directory; "outside" files are real Mach-O images
/// that would load if they were opened.
@Suite(.bounded) struct RootConfinementTests {
    /// A scratch tree: `base/root` is the root, `base/evil` is outside it.
    struct Tree {
        let base: URL
        var root: String { base.appendingPathComponent("root").path }
        var outside: String { base.appendingPathComponent("evil").path }

        init() throws {
            base = FileManager.default.temporaryDirectory.appendingPathComponent("dyld3-root-\(UUID().uuidString)")
            for directory in ["root/usr/lib", "root/app", "evil"] {
                try FileManager.default.createDirectory(at: base.appendingPathComponent(directory), withIntermediateDirectories: true)
            }
        }

        func remove() { try? FileManager.default.removeItem(at: base) }

        /// Writes `bytes` at `path` relative to the tree.
        func write(_ bytes: [UInt8], _ path: String) throws {
            try Data(bytes).write(to: base.appendingPathComponent(path))
        }

        func symlink(_ path: String, to target: String) throws {
            try FileManager.default.createSymbolicLink(atPath: base.appendingPathComponent(path).path, withDestinationPath: target)
        }
    }

    static let corpusDylib = "chained_x86_64/libquadmath.0.dylib"
    static let otherDylib = "chained_x86_64/libgcc_s.1.1.dylib"
    static let secret = "TOP-SECRET-SHADOW-LINE"

    /// libquadmath with its first dependency (`/usr/lib/libSystem.B.dylib`) renamed to `name`.
    static func app(dependingOn name: String) throws -> [UInt8] {
        var bytes = try Corpus.bytes(Paths.corpus.appendingPathComponent(corpusDylib).path)
        let old = Array("/usr/lib/libSystem.B.dylib".utf8)
        let new = Array(name.utf8)
        precondition(new.count <= old.count)
        let at = try #require(bytes.indices.first { bytes[$0..<min($0 + old.count, bytes.count)].elementsEqual(old) })
        for index in 0..<old.count { bytes[at + index] = index < new.count ? new[index] : 0 }
        return bytes
    }

    @Test func dotDotInAbsoluteNamesAndRpathsStopsAtTheRoot() {
        let resolver = PathResolver(root: "/R", executablePath: "/R/app/main")
        let rpaths = [PathResolver.RPath(path: "/../../x/../../lib", declaringImageDirectory: "/R/app")]
        for name in ["/../../../../outside/libEvil.dylib", "@rpath/../../../../outside/libEvil.dylib",
                     "@loader_path/../../../../outside/libEvil.dylib", "@executable_path/../../../outside/libEvil.dylib"] {
            let candidates = resolver.candidates(for: name, loaderDirectory: "/R/usr/lib", rpaths: rpaths)
            #expect(!candidates.isEmpty)
            for candidate in candidates {
                #expect(candidate.hasPrefix("/R/"), "\(name) -> \(candidate)")
            }
        }
        // Without a root, paths are only normalized.
        let free = PathResolver(root: nil, executablePath: "/app/main")
        #expect(free.candidates(for: "/a/../b/libX.dylib", loaderDirectory: "/app", rpaths: []).first == "/b/libX.dylib")
    }

    @Test func anInstallNameClimbingOutOfTheRootIsNotLoaded() throws {
        let tree = try Tree()
        defer { tree.remove() }
        try tree.write(try Corpus.bytes(Paths.corpus.appendingPathComponent(Self.otherDylib).path), "evil/libE.dylib")
        try tree.write(try Self.app(dependingOn: "/../../../evil/libE.dylib"), "root/app/main")
        let error = try #require(throws: LoadError.self) {
            try DependencyGraph(roots: [tree.root + "/app/main"], arch: "x86_64", root: tree.root)
        }
        // Had the outside dylib been opened, the error would be about its own libSystem.
        guard case let .missingDylib(installName, _, tried) = error else {
            Issue.record("expected a missing dylib, got \(error)")
            return
        }
        #expect(installName == "/../../../evil/libE.dylib")
        #expect(tried.allSatisfy { $0.hasPrefix(tree.root + "/") }, "\(tried)")
    }

    @Test func symlinksResolveInsideTheRoot() throws {
        let tree = try Tree()
        defer { tree.remove() }
        let outsideImage = try Corpus.bytes(Paths.corpus.appendingPathComponent(Self.otherDylib).path)
        let insideImage = try Corpus.bytes(Paths.corpus.appendingPathComponent(Self.corpusDylib).path)
        try tree.write(outsideImage, "evil/libE.dylib")
        // An absolute link to the outside file, and a relative one climbing out of the root.
        try tree.symlink("root/usr/lib/libAbs.dylib", to: tree.outside + "/libE.dylib")
        try tree.symlink("root/usr/lib/libRel.dylib", to: "../../../evil/libE.dylib")
        for link in ["libAbs.dylib", "libRel.dylib"] {
            let path = tree.root + "/usr/lib/" + link
            let error = try #require(throws: LoadError.self) { try ImageFile.load(path: path, arch: "x86_64", root: tree.root) }
            #expect("\(error)".contains("inside the root"), "\(error)")
        }
        // The same links find the file at the same place inside the root.
        try FileManager.default.createDirectory(atPath: tree.root + tree.outside, withIntermediateDirectories: true)
        try tree.write(insideImage, "root" + tree.outside + "/libE.dylib")
        try FileManager.default.createDirectory(atPath: tree.root + "/evil", withIntermediateDirectories: true)
        try tree.write(insideImage, "root/evil/libE.dylib")
        for link in ["libAbs.dylib", "libRel.dylib"] {
            let file = try ImageFile.load(path: tree.root + "/usr/lib/" + link, arch: "x86_64", root: tree.root)
            #expect(file.path.hasPrefix(tree.root + "/"), "\(file.path)")
            #expect(file.image.id?.installName == "/DLC/scipy/.dylibs/libquadmath.0.dylib")
        }
    }

    @Test func errorsNeverEchoAFilesBytes() throws {
        let tree = try Tree()
        defer { tree.remove() }
        try FileManager.default.createDirectory(atPath: tree.root + "/etc", withIntermediateDirectories: true)
        try tree.write(Array((Self.secret + "\n").utf8), "root/etc/shadow")
        try tree.write(Array((Self.secret + "\n").utf8), "evil/shadow")
        try tree.write(try Self.app(dependingOn: "/../../../../etc/shadow"), "root/app/main")
        let error = try #require(throws: LoadError.self) {
            try DependencyGraph(roots: [tree.root + "/app/main"], arch: "x86_64", root: tree.root)
        }
        let text = "\(error)"
        #expect(text.contains(tree.root + "/etc/shadow"), "\(text)")
        for fragment in [Self.secret, "TOP-", "0x2d504f54", "0x544f502d"] {
            #expect(!text.contains(fragment), "\(text)")
        }
    }
}
