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

    static func expectError(_ result: Dyld3Binary.Result, _ command: String, status: Int32 = 1, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(result.status == status, "\(command): \(result.status) \(result.stderr)", sourceLocation: sourceLocation)
        let error = result.json?["error"] as? [String: Any]
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

        let missing = "/nonexistent-dyld3-\(UUID().uuidString)"
        let failures: [(String, [String], Int32)] = [
            ("launch", ["launch", missing, "--json"] + common, 1),
            ("launch without a closure", ["launch", app.bundle, "--json", "--mode", "dyld3", "--root", app.root, "--cache", missing], 1),
            ("compare", ["compare", missing, "--json"] + common, 1),
            ("verify", ["verify", "--cache", missing, "--json"], 2),
            ("closure dump", ["closure", "dump", missing, "--json"], 1),
            ("inspect", ["inspect", missing, "--json"], 1),
        ]
        for (name, arguments, status) in failures {
            Self.expectError(try await Dyld3Binary.run(arguments, limitSeconds: 60), name, status: status)
        }
    }
}
