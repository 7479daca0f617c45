import Foundation
import ClosureCache
import Testing
import TestSupport
import ClosureFormat

/// `dyld3 launch` as a user runs it: `auto` uses a valid closure, falls back to dyld2 with the
/// reason for a missing, corrupt or stale one and still gives main's result; `--rebuild`
/// writes a fresh closure; `--mode dyld3` refuses to fall back.
extension ClosureTests {
    static func launch(_ app: FixtureApp, cache: String, _ extra: [String] = []) async throws -> (json: [String: Any], status: Int32) {
        let result = try await Dyld3Binary.run(["launch", "--json", "--cache", cache, "--root", app.root] + extra + [app.bundle])
        let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any] ?? [:]
        return (object, result.status)
    }

    @Test func autoModeFallsBackWithTheReasonAndTheRightResult() async throws {
        let original = try #require(Self.launchable.first { $0.name == "paths" && $0.variant == "x86_64-opcodes" })
        guard case let .result(expected, _) = original.expectation else { return }
        let app = try original.scratchCopy()
        defer { Scratch.remove(app.directory.path) }
        let cache = try Scratch.directory("auto")
        defer { Scratch.remove(cache) }

        // No closure yet: dyld2, reason "missing"; --rebuild writes one.
        var (json, status) = try await Self.launch(app, cache: cache, ["--rebuild"])
        #expect(status == 0 && json["mode"] as? String == "dyld2")
        #expect((json["fallback_reason"] as? String)?.hasPrefix("missing") == true)
        #expect((json["result"] as? NSNumber)?.int32Value == expected)

        // Valid closure: dyld3, no fallback.
        (json, status) = try await Self.launch(app, cache: cache)
        #expect(status == 0 && json["mode"] as? String == "dyld3" && json["fallback_reason"] is NSNull)
        #expect((json["result"] as? NSNumber)?.int32Value == expected)
        let closurePath = try #require(json["closure"] as? String)

        // Corrupt: one flipped byte.
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: closurePath)))
        bytes[bytes.count - 3] ^= 0x20
        try Scratch.write(bytes, to: closurePath)
        (json, status) = try await Self.launch(app, cache: cache, ["--rebuild"])
        #expect(json["mode"] as? String == "dyld2" && (json["fallback_reason"] as? String)?.hasPrefix("corrupt") == true)
        #expect((json["result"] as? NSNumber)?.int32Value == expected)

        // Stale: an image's content changes (same size, signed again).
        let dylib = app.bundle + "/Lib/A/libPick.dylib"
        var image = Array(try Data(contentsOf: URL(fileURLWithPath: dylib)))
        try SignedImageEdit.changeUnusedByteAndResign(&image)
        try Data(image).write(to: URL(fileURLWithPath: dylib))
        (json, status) = try await Self.launch(app, cache: cache)
        #expect(json["mode"] as? String == "dyld2" && (json["fallback_reason"] as? String)?.hasPrefix("stale") == true)
        #expect((json["result"] as? NSNumber)?.int32Value == expected)

        // --mode dyld3 with a stale closure is an error, not a fallback.
        let strict = try await Dyld3Binary.run(["launch", "--mode", "dyld3", "--cache", cache, "--root", app.root, app.bundle])
        #expect(strict.status != 0 && strict.stderr.contains("stale"))
    }
}
