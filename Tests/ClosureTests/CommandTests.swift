import TestSupport
import Foundation
import ClosureCache
import LoaderCore
import Testing
import ClosureFormat

extension ClosureTests {
    /// A cache holding every launchable app's closure verifies clean (what `make test` runs
    /// after `dyld3 install`), in text and in JSON.
    @Test func verifyAcceptsACacheOfEveryApp() async throws {
        let cache = try Scratch.directory("all")
        defer { Scratch.remove(cache) }
        for app in Self.launchable { try app.install(into: cache) }
        let text = try await Dyld3Binary.verify(cache)
        #expect(text.status == 0, "\(text.stdout)\(text.stderr)")
        #expect(text.lines == ["verify: \(Self.launchable.count) closures, \(Self.launchable.count) valid, 0 corrupt, 0 stale"])

        let json = try await Dyld3Binary.verify(cache, json: true)
        #expect(json.status == 0)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let files = try #require(object["files"] as? [[String: Any]])
        #expect(files.count == Self.launchable.count)
        #expect(files.allSatisfy { $0["status"] as? String == "valid" && ($0["problems"] as? [Any])?.isEmpty == true })
        let counts = try #require(object["counts"] as? [String: Int])
        #expect(counts["closures"] == Self.launchable.count && counts["valid"] == Self.launchable.count)
    }

    @Test func verifyWithoutACacheDirectoryExitsTwo() async throws {
        let missing = FileManager.default.temporaryDirectory.appendingPathComponent("dyld3-no-cache-\(UUID().uuidString)").path
        let result = try await Dyld3Binary.verify(missing)
        #expect(result.status == 2)
        #expect(result.stderr.contains("\(missing): no cache directory"))
        #expect(!FileManager.default.fileExists(atPath: missing), "verify creates nothing")

        let empty = try Scratch.directory("empty")
        defer { Scratch.remove(empty) }
        let emptyResult = try await Dyld3Binary.verify(empty)
        #expect(emptyResult.status == 0)
        #expect(emptyResult.lines == ["verify: 0 closures, 0 valid, 0 corrupt, 0 stale"])
    }

    /// The text dump shows the header, every image with its identity, segments and
    /// dependencies, and the shared tables.
    @Test func dumpShowsEverySection() async throws {
        let app = try #require(Self.launchable.first { $0.name == "weak-import" && $0.variant == "x86_64-chained" })
        let cache = try Scratch.directory("dump")
        defer { Scratch.remove(cache) }
        let path = try app.install(into: cache)
        let closure = try ClosureFile.read(path)
        let file = try #require(FileManager.default.contents(atPath: path))

        let result = try await Dyld3Binary.run(["closure", "dump", path, "--fixups", "2"])
        #expect(result.status == 0, "\(result.stderr)")
        let text = result.stdout
        #expect(text == (try ClosureDump(path: path).text(fixupsShown: 2)))
        for expected in [
            "version:       \(LaunchClosure.formatVersion)", "file size:     \(file.count) bytes", "builder:       \(closure.builder)",
            "arch:          x86_64", "bind targets (\(closure.bindTargets.count)):", "initializer order:", "entry: image 0 (weak-import) +0x",
            "regular  /usr/lib/libSystem.B.dylib -> image 1 (libSystem.B.dylib)", "__DATA_CONST", "(read-only after fixups)",
        ] {
            #expect(text.contains(expected), "\(expected)")
        }
        for (index, image) in closure.images.enumerated() {
            #expect(text.contains("image \(index): \(image.path)"))
            #expect(text.contains("content 0x" + String(image.identity.contentHash, radix: 16)))
            #expect(text.contains("binds:         \(image.bindCount) ("))
        }
        if closure.missingWeakDylibs.isEmpty {
            #expect(text.contains("missing weak dylibs: none"))
        } else {
            for missing in closure.missingWeakDylibs { #expect(text.contains("  \(missing.installName) (needed by \(missing.neededBy))")) }
        }
        #expect(text.contains("... "), "fixups past the limit are counted, not shown")
    }

    /// The JSON dump holds every fixup, equal to the decoded runs.
    @Test(arguments: launchable.filter { $0.variant.hasPrefix("arm64") })
    func jsonDumpHoldsEveryFixup(_ app: FixtureApp) async throws {
        let cache = try Scratch.directory("json")
        defer { Scratch.remove(cache) }
        let path = try app.install(into: cache)
        let closure = try ClosureFile.read(path)
        let result = try await Dyld3Binary.run(["closure", "dump", "--json", path])
        #expect(result.status == 0, "\(result.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let header = try #require(object["header"] as? [String: Any])
        #expect(header["version"] as? Int == Int(LaunchClosure.formatVersion))
        #expect(object["arch"] as? String == app.arch)
        let images = try #require(object["images"] as? [[String: Any]])
        try #require(images.count == closure.images.count)
        var compared = 0
        for (index, image) in images.enumerated() {
            #expect(image["path"] as? String == closure.images[index].path)
            let fixups = try #require(image["fixups"] as? [[String: Any]])
            let decoded = try closure.fixups(ofImage: index)
            try #require(fixups.count == decoded.count)
            for (json, fixup) in zip(fixups, decoded) {
                #expect(json["location"] as? UInt64 == fixup.vmOffset)
                let target = try #require(json["target"] as? [String: Any])
                switch fixup.kind {
                case let .rebase(offset, _):
                    #expect(json["kind"] as? String == "rebase" && target["offset"] as? UInt64 == offset && target["image"] as? Int == index)
                case let .bind(.image(targetImage, offset), addend):
                    #expect(json["kind"] as? String == "bind" && json["addend"] as? Int64 == addend)
                    #expect(target["image"] as? Int == targetImage && target["offset"] as? UInt64 == offset)
                case let .bind(.absolute(value), _):
                    #expect(target["kind"] as? String == "absolute" && target["value"] as? UInt64 == value)
                case .bind(.missingWeakImport, _):
                    #expect(target["kind"] as? String == "missing-weak-import")
                }
                compared += 1
            }
        }
        #expect(compared == closure.totalRebases + closure.totalBinds)
        #expect(compared > 0)
        #expect((object["bind_targets"] as? [Any])?.count == closure.bindTargets.count)
        #expect((object["initializer_order"] as? [Int]) == closure.initializerOrder)
    }

    @Test func dumpRefusesADamagedFile() async throws {
        let (_, _, file) = try Self.sampleClosure()
        let cache = try Scratch.directory("dump-damaged")
        defer { Scratch.remove(cache) }
        try Scratch.write(Array(file.dropLast(7)), to: cache + "/x.dyld3closure")
        let result = try await Dyld3Binary.run(["closure", "dump", cache + "/x.dyld3closure"])
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.contains("corrupt"))
    }
}
