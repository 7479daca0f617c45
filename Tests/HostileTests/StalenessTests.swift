import Foundation
#if canImport(Glibc)
import Glibc
#endif
@testable import ClosureCache
import LaunchPlan
import TestSupport
import Testing
@testable import ClosureFormat

/// Every way an image can change after install is caught before the closure is used; the
/// `auto` launch then falls back and gives what the slow path gives with the files as they
/// are now, never the closure's stale fixups.
@Suite(.serialized, .bounded) struct StalenessTests {
    /// Installs a scratch copy of `name`, applies `change` to it, and checks what the
    /// closure, `verify` and an `auto` launch say.
    static func check(_ name: String, image pick: (FixtureApp) -> String,
                      change: (String, FixtureApp) throws -> Void) async throws -> (stale: ClosureError?, auto: Dyld3Binary.Result, dyld2: Dyld3Binary.Result) {
        let app = try FixtureApp.named(name).scratchCopy()
        let cache = try Scratch.directory("stale")
        defer { Scratch.remove(cache); Scratch.remove(app.directory.path) }
        let path = try app.install(into: cache)
        let closure = try ClosureFile.read(path)
        #expect(closure.staleImage(closurePath: path) == nil)
        // Date the closure an hour ahead so that the racy rule (tested on its own) does not
        // force hashing: what is caught here is caught by stat, ctime and the hash.
        var times = [timespec(tv_sec: time(nil), tv_nsec: 0), timespec(tv_sec: time(nil) + 3600, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
        if FileManager.default.fileExists(atPath: pick(app)) {
            let ctime = Int64(try Self.fileStatus(pick(app)).st_ctim.tv_sec)
            let probe = ImageIdentity(size: 0, mtimeSeconds: 0, mtimeNanoseconds: 0, inode: 0, ctimeSeconds: ctime, uuid: nil, contentHash: 0)
            #expect(!probe.isRacy(builtAt: Int64(try Self.fileStatus(path).st_mtim.tv_sec)))
        }
        try change(pick(app), app)
        let auto = try await Dyld3Binary.launchAuto(app, cache: cache)
        let dyld2 = try await Dyld3Binary.run(["launch", app.bundle, "--root", app.root, "--mode", "dyld2", "--json"])
        return (closure.staleImage(closurePath: path), auto, dyld2)
    }

    static func result(_ run: Dyld3Binary.Result) -> Int32? { (run.json?["result"] as? NSNumber)?.int32Value }

    static func fileStatus(_ path: String) throws -> stat {
        var info = stat()
        guard stat(path, &info) == 0 else { throw FixtureError("stat \(path): \(errno)") }
        return info
    }

    /// Rewrites the image in place (one unused byte changed, the image signed again), then
    /// sets the mtime back: size, mtime and inode are what the closure recorded, only the
    /// ctime (which utimes cannot set), the bytes and the cdHash differ.
    @Test func newContentWithTheSameSizeAndMtime() async throws {
        let (stale, auto, dyld2) = try await Self.check("init-order", image: { $0.bundle + "/Frameworks/Net.framework/Net" }) { image, _ in
            let before = try Self.fileStatus(image)
            var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: image)))
            try SignedImageEdit.changeUnusedByteAndResign(&bytes)
            let handle = try FileHandle(forUpdating: URL(fileURLWithPath: image))
            try handle.write(contentsOf: bytes)
            try handle.close()
            var times = [before.st_atim, before.st_mtim]
            #expect(utimensat(AT_FDCWD, image, &times, 0) == 0)
            let after = try Self.fileStatus(image)
            #expect(after.st_size == before.st_size && after.st_ino == before.st_ino)
            #expect(after.st_mtim.tv_sec == before.st_mtim.tv_sec && after.st_mtim.tv_nsec == before.st_mtim.tv_nsec)
        }
        #expect(stale?.kind == "stale" && "\(stale!)".contains("has another code signature"), "\(String(describing: stale))")
        #expect((auto.json?["fallback_reason"] as? String)?.hasPrefix("stale: ") == true)
        #expect(Self.result(auto) == Self.result(dyld2) && Self.result(auto) != nil)
    }

    /// The same edit found by the racy rule alone: an identity whose mtime or ctime is within
    /// 2 s of the closure file's mtime is always hashed.
    @Test func racyIdentitiesAreHashed() throws {
        let identity = ImageIdentity(size: 1, mtimeSeconds: 1_000, mtimeNanoseconds: 0, inode: 1, ctimeSeconds: 1_000,
                                     ctimeNanoseconds: 0, uuid: nil, contentHash: 0)
        #expect(identity.isRacy(builtAt: 1_000))
        #expect(identity.isRacy(builtAt: 1_002))
        #expect(!identity.isRacy(builtAt: 1_003))
        var late = identity
        late.ctimeSeconds = .max
        #expect(late.isRacy(builtAt: 0))
    }

    /// A touch changes the mtime only: stat differs, the hash matches, the closure stays valid.
    @Test func touchedImageIsHashedAndStillValid() async throws {
        let (stale, auto, _) = try await Self.check("init-order", image: { $0.bundle + "/Frameworks/Net.framework/Net" }) { image, _ in
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: 1_500_000_000)], ofItemAtPath: image)
        }
        #expect(stale == nil)
        #expect(auto.json?["mode"] as? String == "dyld3")
        #expect(Self.result(auto) == (try FixtureApp.named("init-order").expectedResult))
    }

    /// The app's directory replaced by a link to a copy whose executable is another build,
    /// and the fast path asked for the app by the very path its closure was bound to (so the
    /// binding matches without a `realpath`): the images' identity refuses the closure. (The
    /// command line finds no closure there at all: it names closures by the resolved path.)
    @Test func appDirectoryReplacedByALinkToAnotherBuild() async throws {
        let original = try FixtureApp.named("init-order")
        let app = try original.scratchCopy()
        let cache = try Scratch.directory("stale-link")
        defer { Scratch.remove(cache); Scratch.remove(app.directory.path) }
        let path = try app.install(into: cache)
        let bundle = app.bundle
        #expect(rename(bundle, bundle + ".orig") == 0)
        try FileManager.default.copyItem(atPath: bundle + ".orig", toPath: bundle + ".other")
        try FileManager.default.removeItem(atPath: bundle + ".other/init-order")
        try FileManager.default.copyItem(atPath: original.directory.appendingPathComponent("x86_64-opcodes/init-order.app/init-order").path,
                                         toPath: bundle + ".other/init-order")
        try FileManager.default.createSymbolicLink(atPath: bundle, withDestinationPath: bundle + ".other")
        guard let error = ClosureRefusal.launchError(app, closurePath: path) else { return }
        guard case let .stale(_, image, what) = error else {
            Issue.record("not refused as stale: \(error)")
            return
        }
        #expect(image == app.executable, "\(what)")
        let auto = try await Dyld3Binary.launchAuto(app, cache: cache)
        try ClosureRefusal.expectFallback(auto, of: app) { $0.hasPrefix("missing: ") }
    }

    /// Renamed over by the other fixup style's build of the same image.
    @Test func replacedByAnotherBuild() async throws {
        let original = try FixtureApp.named("init-order")
        let (stale, auto, dyld2) = try await Self.check("init-order", image: { $0.bundle + "/Frameworks/Net.framework/Net" }) { image, _ in
            let replacement = original.directory.appendingPathComponent("x86_64-opcodes/init-order.app/Frameworks/Net.framework/Net").path
            try FileManager.default.copyItem(atPath: replacement, toPath: image + ".new")
            #expect(rename(image + ".new", image) == 0)
        }
        let text = stale.map { "\($0)" } ?? ""
        #expect(text.hasSuffix("was replaced by another file (content differs)") || text.contains("changed size"), "\(text)")
        #expect((auto.json?["fallback_reason"] as? String)?.hasPrefix("stale: ") == true)
        #expect(Self.result(auto) == Self.result(dyld2) && Self.result(auto) != nil)
    }

    /// Deleted: stale, and the fallback reports the slow path's missing-dylib error.
    @Test func removedImage() async throws {
        let (stale, auto, dyld2) = try await Self.check("init-order", image: { $0.bundle + "/Frameworks/Net.framework/Net" }) { image, _ in
            try FileManager.default.removeItem(atPath: image)
        }
        #expect(stale.map { "\($0)" }?.hasSuffix("was removed") == true)
        #expect(auto.status == 1 && dyld2.status == 1)
        #expect(((auto.json?["error"] as? [String: Any])?["what"] as? String)?.contains("Net") == true, "\(auto.stdout)")
    }

    /// A copy of the second libPick appears in `@executable_path/Missing`, the first rpath,
    /// which held nothing at install time: dyld would now load it, so the closure is stale.
    @Test func newFileShadowingAnEarlierRpathEntry() async throws {
        let original = try FixtureApp.named("paths")
        let closure = try original.closure()
        let missing = original.bundle + "/Missing/libPick.dylib"
        #expect(closure.images[0].absentPaths.contains(missing), "\(closure.images[0].absentPaths)")
        var shadow = ""
        let (stale, auto, dyld2) = try await Self.check("paths", image: { $0.bundle + "/Missing" }) { directory, app in
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            shadow = directory + "/libPick.dylib"
            try FileManager.default.copyItem(atPath: app.bundle + "/Lib/B/libPick.dylib", toPath: shadow)
        }
        #expect(stale.map { "\($0)" }?.hasSuffix("has a dependency shadowed by a new file at \(shadow)") == true, "\(String(describing: stale))")
        #expect((auto.json?["fallback_reason"] as? String)?.hasPrefix("stale: ") == true)
        // The slow path now loads the other libPick: the closure's fixups would have been wrong.
        #expect(Self.result(auto) == Self.result(dyld2) && Self.result(auto) != nil)
        #expect(Self.result(auto) != (try original.expectedResult))
    }

    /// A weak-linked dylib that was missing at install time (its binds read 0) appears at
    /// the first path dyld would try: a launch would now load it and bind to it, so the
    /// closure is stale, and the fallback's result is the one with the dylib present.
    @Test func missingWeakDylibThatAppears() async throws {
        let original = try FixtureApp.named("weak-import")
        let closure = try original.closure()
        let gone = original.bundle + "/Frameworks/libGone.dylib"
        #expect(closure.missingWeakDylibs.map(\.installName) == ["@rpath/libGone.dylib"], "\(closure.missingWeakDylibs)")
        #expect(closure.images[0].absentPaths.contains(gone), "\(closure.images[0].absentPaths)")
        // The build made for linking against, with every symbol the app imports weakly.
        let built = FixtureApp.buildDirectory.appendingPathComponent(".obj/\(original.variant)/weak-import/linkstub/Frameworks/libGone.dylib").path
        var appeared = ""
        let (stale, auto, dyld2) = try await Self.check("weak-import", image: { $0.bundle + "/Frameworks/libGone.dylib" }) { path, _ in
            appeared = path
            try FileManager.default.copyItem(atPath: built, toPath: path)
        }
        #expect(stale.map { "\($0)" }?.hasSuffix("has a dependency shadowed by a new file at \(appeared)") == true, "\(String(describing: stale))")
        #expect((auto.json?["fallback_reason"] as? String)?.hasPrefix("stale: ") == true, "\(auto.stdout)")
        #expect(Self.result(auto) == Self.result(dyld2) && Self.result(auto) != nil, "\(auto.stdout) \(dyld2.stdout)")
        #expect(Self.result(auto) != (try original.expectedResult))
    }

    /// A weak-linked dylib that is missing lets the launch go on only for weak imports: a
    /// strong import from it fails both paths with dyld's missing-symbol error, naming the
    /// dylib as weak-linked and missing, and the install writes no closure.
    @Test func strongImportFromAMissingWeakDylibFails() async throws {
        let directory = try Scratch.directory("weak-strong")
        defer { Scratch.remove(directory) }
        try MachOBuilder.executable(binding: "_needed", from: "@loader_path/libGone.dylib", .weak).write(to: directory + "/main")
        let (accepted, message) = try await Oracle.objdumpAccepts(["--macho", "--private-headers", directory + "/main"])
        #expect(accepted, "\(message)")
        let headers = try await Oracle.objdump(["--macho", "--private-headers", directory + "/main"])
        #expect(headers.contains("LC_LOAD_WEAK_DYLIB"), "\(headers)")
        for mode in ["dyld2", "auto"] {
            let run = try await Dyld3Binary.run(["launch", directory + "/main", "--mode", mode, "--cache", directory + "/cache", "--json"],
                                                limitSeconds: 60)
            let error = run.json?["error"] as? [String: Any]
            #expect(run.status == 1 && error?["kind"] as? String == "missing-symbol" && error?["what"] as? String == "_needed", "\(mode): \(run.stdout)")
            #expect((error?["why"] as? String)?.contains("@loader_path/libGone.dylib (weak-linked, missing)") == true, "\(mode): \(run.stdout)")
        }
        let install = try await Dyld3Binary.run(["install", directory + "/main", "--cache", directory + "/cache"], limitSeconds: 60)
        #expect(install.status == 1 && install.stderr.contains("_needed"), "\(install.stderr)")
    }
}
