import TestSupport
import Foundation
import ClosureCache
import Testing
import ClosureFormat

/// A change to one image of an installed app, and what verify must say about it.
struct ImageChange: CustomStringConvertible, Sendable {
    enum Kind: Sendable {
        /// New mtime, same bytes.
        case touch
        /// One byte changed in place (same inode, same size).
        case flipByte
        /// Renamed over by the other fixup style's build of the same image.
        case otherBuild
        /// Deleted.
        case delete
    }

    let kind: Kind
    /// How verify describes the changed image; nil when it stays valid (touch) or when the
    /// wording depends on the replacement (a size change or a new inode).
    let expected: String?
    var description: String { "\(kind)" }

    static let all = [
        ImageChange(kind: .touch, expected: nil),
        ImageChange(kind: .flipByte, expected: "has new content"),
        ImageChange(kind: .otherBuild, expected: nil),
        ImageChange(kind: .delete, expected: "was removed"),
    ]

    /// Applies the change to `image` of `app` (a scratch copy of `original`).
    func apply(to image: String, of app: FixtureApp, original: FixtureApp) throws {
        let moved = Date(timeIntervalSince1970: 1_500_000_000)
        switch kind {
        case .touch:
            try FileManager.default.setAttributes([.modificationDate: moved], ofItemAtPath: image)
        case .flipByte:
            let handle = try FileHandle(forUpdating: URL(fileURLWithPath: image))
            let size = try handle.seekToEnd()
            try handle.seek(toOffset: size / 2)
            let byte = try #require(try handle.read(upToCount: 1)?.first)
            try handle.seek(toOffset: size / 2)
            try handle.write(contentsOf: [byte ^ 0xff])
            try handle.close()
            // Stat must differ for the content to be hashed; a write within the clock's
            // granularity could leave the mtime as it was.
            try FileManager.default.setAttributes([.modificationDate: moved], ofItemAtPath: image)
        case .otherBuild:
            let otherStyle = app.variant.hasSuffix("-chained") ? app.variant.replacingOccurrences(of: "-chained", with: "-opcodes")
                : app.variant.replacingOccurrences(of: "-opcodes", with: "-chained")
            let relative = String(image.dropFirst("\(app.directory.path)/\(app.variant)/".count))
            let replacement = "\(original.directory.path)/\(otherStyle)/\(relative)"
            let temporary = image + ".new"
            try FileManager.default.copyItem(atPath: replacement, toPath: temporary)
            #expect(rename(temporary, image) == 0)
        case .delete:
            try FileManager.default.removeItem(atPath: image)
        }
    }
}

extension ClosureTests {
    /// Install a scratch copy of an app, change one of its dylibs, then ask
    /// `staleImages()`, `ClosureVerification` and `dyld3 verify`.
    @Test(arguments: ImageChange.all)
    func changedImageMakesTheClosureStale(_ change: ImageChange) async throws {
        let original = try #require(Self.launchable.first { $0.name == "basic" && $0.variant == "x86_64-chained" })
        let app = try original.scratchCopy()
        defer { Scratch.remove(app.directory.path) }
        let cache = try Scratch.directory("stale")
        defer { Scratch.remove(cache) }
        let path = try app.install(into: cache)
        let closure = try ClosureFile.read(path)
        let dylib = try #require(closure.images.map(\.path).first { $0.hasSuffix("/Util.framework/Util") })
        #expect(dylib.hasPrefix(app.directory.path))

        try change.apply(to: dylib, of: app, original: original)

        let stale = closure.staleImages()
        let verdict = ClosureVerification(checking: path)
        let result = try await Dyld3Binary.verify(cache)
        let summary = result.lines.last
        if change.kind == .touch {
            #expect(stale.isEmpty)
            #expect(verdict.status == .valid)
            #expect(result.status == 0)
            #expect(summary == "verify: 1 closures, 1 valid, 0 corrupt, 0 stale")
            return
        }
        #expect(stale.map(\.image) == [dylib], "only the changed image is stale")
        if let expected = change.expected {
            #expect(stale.first?.what == expected)
        } else {
            let what = stale.first?.what ?? ""
            #expect(what.hasPrefix("changed size") || what == "was replaced by another file (content differs)", "\(what)")
        }
        #expect(verdict.status == .stale)
        #expect(verdict.problems.map(\.description) == stale.map { "stale: \($0.image) \($0.what)" })
        #expect(result.status == 4, "\(result.stdout)")
        #expect(result.lines.first == "\(path): stale: \(dylib) \(stale.first?.what ?? "")")
        #expect(summary == "verify: 1 closures, 0 valid, 0 corrupt, 1 stale")
        let launchError = try #require(closure.staleImage(closurePath: path))
        #expect(launchError.kind == "stale")
    }

    /// Stale and corrupt together exit 3; stale alone 4; valid alone 0.
    @Test func exitStatusPrefersCorruptOverStale() async throws {
        let original = try #require(Self.launchable.first { $0.name == "weak-import" && $0.variant == "arm64-opcodes" })
        let app = try original.scratchCopy()
        defer { Scratch.remove(app.directory.path) }
        let cache = try Scratch.directory("mixed")
        defer { Scratch.remove(cache) }
        try original.install(into: cache)
        #expect(try await Dyld3Binary.verify(cache).status == 0)

        let stalePath = try app.install(into: cache)
        try FileManager.default.removeItem(atPath: app.executable)
        let staleOnly = try await Dyld3Binary.verify(cache)
        #expect(staleOnly.status == 4)
        #expect(staleOnly.lines == ["\(stalePath): stale: \(app.executable) was removed", "verify: 2 closures, 1 valid, 0 corrupt, 1 stale"])

        try Scratch.write(Array(ClosureFile.encode(try original.closure()).dropLast()), to: cache + "/truncated.dyld3closure")
        let mixed = try await Dyld3Binary.verify(cache)
        #expect(mixed.status == 3)
        #expect(mixed.lines.last == "verify: 3 closures, 1 valid, 1 corrupt, 1 stale")
    }
}
