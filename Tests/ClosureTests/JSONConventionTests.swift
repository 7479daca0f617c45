import TestSupport
import Foundation
import Testing

/// One JSON convention for every command that prints JSON: `schema_version` first, keys in
/// snake_case (units in the name: `_ns`, `_bytes`), and on failure `{"error": {kind, what,
/// why, fix}}` on stdout with exit status 1 (verify: 2 without a cache). docs/json.md.
extension ClosureTests {
    /// Every key of `value`, at any depth, that is not snake_case.
    static func keysNotSnakeCase(_ value: Any, at path: String = "") -> [String] {
        if let object = value as? [String: Any] {
            return object.flatMap { key, member in
                (key.range(of: "^[a-z][a-z0-9_]*$", options: .regularExpression) == nil ? [path + "/" + key] : [])
                    + keysNotSnakeCase(member, at: path + "/" + key)
            }
        }
        if let array = value as? [Any] { return array.flatMap { keysNotSnakeCase($0, at: path + "[]") } }
        return []
    }

    static func expectConvention(_ result: Dyld3Binary.Result, _ command: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let object = result.json
        #expect(object?["schema_version"] as? Int == 1, "\(command): \(result.stdout.prefix(300))", sourceLocation: sourceLocation)
        #expect(keysNotSnakeCase(object ?? [:]).isEmpty, "\(command): \(keysNotSnakeCase(object ?? [:]))", sourceLocation: sourceLocation)
    }

    /// The error kinds docs/json.md lists (its `error-kinds` table): every command's come from it.
    static func documentedErrorKinds() throws -> Set<String> {
        let doc = try String(contentsOf: Paths.repoRoot.appendingPathComponent("docs/json.md"), encoding: .utf8)
        let start = try #require(doc.range(of: "<!-- error-kinds -->")), end = try #require(doc.range(of: "<!-- /error-kinds -->"))
        var kinds: Set<String> = []
        for line in doc[start.upperBound..<end.lowerBound].split(separator: "\n") where line.hasPrefix("| `") {
            let cell = line.dropFirst(2).prefix { $0 != "|" }
            for word in cell.split(separator: "`", omittingEmptySubsequences: false).enumerated() where word.offset % 2 == 1 { kinds.insert(String(word.element)) }
        }
        return kinds
    }

    static func expectError(_ result: Dyld3Binary.Result, _ command: String, status: Int32 = 1, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(result.status == status, "\(command): \(result.status) \(result.stderr)", sourceLocation: sourceLocation)
        let error = result.json?["error"] as? [String: Any]
        let kinds = (try? documentedErrorKinds()) ?? []
        #expect(kinds.count > 10 && kinds.contains(error?["kind"] as? String ?? "?"),
                "\(command): kind \(error?["kind"] ?? "none") is not in docs/json.md's list", sourceLocation: sourceLocation)
        #expect(Set(error?.keys.map { $0 } ?? []) == ["kind", "what", "why", "fix"], "\(command): \(result.stdout)", sourceLocation: sourceLocation)
        #expect(result.json?["schema_version"] as? Int == 1, "\(command): \(result.stdout)", sourceLocation: sourceLocation)
        // The same failure as the one stderr line.
        if let what = error?["what"] as? String, let why = error?["why"] as? String {
            #expect(result.stderr.hasPrefix("dyld3: ") && result.stderr.contains(why), "\(command): \(result.stderr)", sourceLocation: sourceLocation)
            #expect(result.stderr.contains(what), "\(command): \(result.stderr)", sourceLocation: sourceLocation)
        }
    }

    @Test func everyJSONOutputFollowsOneConvention() async throws {
        let app = try Self.fixture("objc")
        let cache = try Scratch.directory("json")
        defer { Scratch.remove(cache) }
        let common = ["--root", app.root, "--cache", cache]
        let install = try await Dyld3Binary.run(["install", app.bundle] + common, limitSeconds: 60)
        #expect(install.status == 0, "\(install.stderr)")
        let closure = try #require(try FileManager.default.contentsOfDirectory(atPath: cache).first { $0.hasSuffix(".dyld3closure") })

        let successes: [(String, [String])] = [
            ("launch", ["launch", app.bundle, "--json", "--stats"] + common),
            ("launch page-in", ["launch", app.bundle, "--json", "--fixups", "page-in"] + common),
            ("compare", ["compare", app.bundle, "--json"] + common),
            ("verify", ["verify", "--cache", cache, "--json"]),
            ("closure dump", ["closure", "dump", cache + "/" + closure, "--json"]),
            ("inspect", ["inspect", app.executable, "--json"]),
            ("inspect --objc", ["inspect", app.bundle + "/Frameworks/Base.framework/Base", "--json", "--objc"]),
        ]
        for (name, arguments) in successes {
            let result = try await Dyld3Binary.run(arguments, limitSeconds: 120)
            #expect(result.status == 0, "\(name): \(result.stderr)")
            Self.expectConvention(result, name)
        }

        // install, key and stub-root: the document, and what it says agrees with the files.
        let installJSON = try await Dyld3Binary.run(["install", app.bundle, "--json"] + common, limitSeconds: 60)
        Self.expectConvention(installJSON, "install")
        let written = try #require((installJSON.json?["closures"] as? [[String: Any]])?.first)
        let dump = try await Dyld3Binary.run(["closure", "dump", cache + "/" + closure, "--json"], limitSeconds: 60)
        let dumpedImages = (dump.json?["images"] as? [Any])?.count
        #expect(written["closure"] as? String == cache + "/" + closure && written["images"] as? Int == dumpedImages,
                "\(written) against \(dumpedImages.map(String.init) ?? "no images")")
        let closureSize = try FileManager.default.attributesOfItem(atPath: cache + "/" + closure)[.size] as? Int
        #expect(written["closure_bytes"] as? Int == closureSize && installJSON.json?["failed"] as? Int == 0)

        let keys = try Scratch.directory("json-keys")
        defer { Scratch.remove(keys) }
        let key = try await Dyld3Binary.run(["key", "generate", "--out", keys + "/pair", "--json"], limitSeconds: 60)
        Self.expectConvention(key, "key generate")
        for member in ["private_key", "public_key"] {
            let path = try #require(key.json?[member] as? String, "\(member): \(key.stdout)")
            #expect(FileManager.default.fileExists(atPath: path), "\(member): \(path)")
        }
        let stubs = try await Dyld3Binary.run(["stub-root", app.executable, "--out", keys + "/root", "--json"], limitSeconds: 120)
        Self.expectConvention(stubs, "stub-root")
        for stub in stubs.json?["stubs"] as? [[String: Any]] ?? [] {
            let path = try #require(stub["path"] as? String)
            #expect(FileManager.default.fileExists(atPath: path), "\(stub)")
        }
        #expect((stubs.json?["stubs"] as? [Any])?.isEmpty == false, "\(stubs.stdout)")
        // An app that gets no closure is one of the document's failures, with the error object.
        let failedInstall = try await Dyld3Binary.run(["install", app.bundle, "/nonexistent-dyld3-app", "--json"] + common, limitSeconds: 60)
        Self.expectConvention(failedInstall, "install with a failure")
        let failure = (failedInstall.json?["failures"] as? [[String: Any]])?.first
        #expect(failedInstall.status == 1 && failedInstall.json?["installed"] as? Int == 1 && failure?["app"] as? String == "/nonexistent-dyld3-app")
        #expect(Set((failure?["error"] as? [String: Any])?.keys.map { $0 } ?? []) == ["kind", "what", "why", "fix"], "\(failedInstall.stdout)")

        let missing = "/nonexistent-dyld3-\(UUID().uuidString)"
        let failures: [(String, [String], Int32)] = [
            ("launch", ["launch", missing, "--json"] + common, 1),
            ("launch without a closure", ["launch", app.bundle, "--json", "--mode", "dyld3", "--root", app.root, "--cache", missing], 1),
            ("compare", ["compare", missing, "--json"] + common, 1),
            ("verify", ["verify", "--cache", missing, "--json"], 2),
            ("closure dump", ["closure", "dump", missing, "--json"], 1),
            ("inspect", ["inspect", missing, "--json"], 1),
            ("key generate", ["key", "generate", "--out", "/proc/version/keys", "--json"], 1),
            ("stub-root", ["stub-root", missing, "--out", missing, "--json"], 1),
        ]
        for (name, arguments, status) in failures {
            Self.expectError(try await Dyld3Binary.run(arguments, limitSeconds: 60), name, status: status)
        }

        // A file that is not Mach-O is `malformed` to every command that reads it.
        let notMachO = keys + "/not-macho"
        try Scratch.write(Array("not a Mach-O file, only text\n".utf8), to: notMachO)
        for arguments in [["inspect", notMachO, "--json"], ["launch", notMachO, "--json"] + common, ["install", notMachO, "--json"] + common] {
            let result = try await Dyld3Binary.run(arguments, limitSeconds: 60)
            let error = (result.json?["error"] as? [String: Any]) ?? ((result.json?["failures"] as? [[String: Any]])?.first?["error"] as? [String: Any])
            #expect(result.status == 1 && error?["kind"] as? String == "malformed", "\(arguments[0]): \(result.stdout)")
        }
    }
}
