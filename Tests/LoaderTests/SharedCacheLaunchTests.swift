import ClosureCache
import ClosureFormat
import Foundation
import ProcessRunner
import TestSupport
import Testing

/// Launches that take the system's dylibs from the shared cache: a generated app whose lower
/// frameworks are the root's (`tools/gen-app --system`), the root's cache built, the closure
/// bound into it. dyld2 loads every image from its file and is the reference: memory compared
/// byte for byte (pointers as image and offset), main's result against the generator's model.
@Suite(.serialized, .bounded) struct SharedCacheLaunchTests {
    static let frameworks = 40, system = 32

    /// A fresh app of `frameworks` frameworks, the first `system` in its root, and the root's
    /// cache; with `plugin`, main loads them with a `dlopen` of a bundle (`gen-app --plugin`).
    static func generated(plugin: Bool = false) async throws -> (directory: String, app: String, root: String, cache: String, expected: Int, closures: String, common: [String]) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("dyld3-cache-launch-\(UUID().uuidString)").path
        let generator = try await ProcessRunner.run(Paths.repoRoot.appendingPathComponent("tools/gen-app").path,
                                                    ["--dylibs", "\(frameworks)", "--system", "\(system)", "--seed", "5", "--out", directory] + (plugin ? ["--plugin"] : []))
        try #require(generator.status == 0, "\(generator.error)")
        let app = directory + "/gen\(frameworks).app", root = directory + "/root"
        let manifest = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: app + "/manifest.json"))) as? [String: Any])
        let expected = try #require((manifest["expect"] as? [String: Any])?["result"] as? Int)
        let built = try await Dyld3Binary.run(["shared-cache", "build", "--root", root], limitSeconds: 120)
        try #require(built.status == 0, "\(built.stderr)")
        return (directory, app, root, root + "/System/Library/dyld/dyld_shared_cache_x86_64", expected,
                directory + "/closures", ["--root", root, "--cache", directory + "/closures"])
    }

    /// The root's cache rebuilt after a system framework changed (another UUID): a launch in
    /// `mode` refuses what binds into the old build, naming the cache; `auto` launches with dyld2.
    static func rebuiltCacheRefuses(_ app: String, mode: String, root: String, cachePath: String, expected: Int, common: [String]) async throws {
        let framework = root + "/System/Library/Frameworks/Fw0001.framework/Fw0001"
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: 5)], ofItemAtPath: framework)
        let rebuilt = try await Dyld3Binary.run(["shared-cache", "build", "--root", root], limitSeconds: 120)
        #expect(rebuilt.status == 0, "\(rebuilt.stderr)")
        let strict = try await Dyld3Binary.run(["launch", app, "--mode", mode] + common, limitSeconds: 120)
        #expect(strict.status != 0 && strict.stderr.contains(cachePath) && strict.stderr.contains("was rebuilt"), "\(mode): \(strict.stderr)")
        let auto = try await Dyld3Binary.run(["launch", app] + common, limitSeconds: 120)
        #expect(auto.status == 0 && auto.stdout.hasPrefix("path: dyld2") && auto.stdout.contains("main returned \(expected)"), "\(auto.stdout) \(auto.stderr)")
    }

    /// `install APP --json`'s closure object.
    static func installedClosure(_ app: String, _ common: [String]) async throws -> [String: Any] {
        let installed = try await Dyld3Binary.run(["install", app, "--json"] + common, limitSeconds: 120)
        return try #require((try jsonObject(installed.stdout)["closures"] as? [[String: Any]])?.first, "\(installed.stderr)")
    }

    @Test func aClosureBoundIntoTheCacheLaunchesAsDyld2DoesFromTheFiles() async throws {
        let (directory, app, root, cachePath, expected, cache, common) = try await Self.generated()
        defer { try? FileManager.default.removeItem(atPath: directory) }

        let closure = try await Self.installedClosure(app, common)
        #expect(closure["shared_cache"] as? String == cachePath)
        // The images the cache holds: every image dyld2 loads from the root (the system
        // frameworks and libSystem), none of the app's.
        let slow = try jsonObject(try await Dyld3Binary.run(["launch", app, "--mode", "dyld2", "--json"] + common, limitSeconds: 120).stdout)
        let fromRoot = (slow["images"] as? [String] ?? []).count { $0.hasPrefix(root + "/") }
        #expect(fromRoot == Self.system + 1)
        #expect(closure["images_in_shared_cache"] as? Int == fromRoot)

        // Memory byte for byte, fixups of the app's images, main's result: eager and page-in.
        for fixups in ["eager", "page-in"] {
            let compared = try await Dyld3Binary.run(["compare", app, "--fixups", fixups] + common, limitSeconds: 120)
            #expect(compared.status == 0 && compared.stdout.contains(": identical: ") && compared.stdout.contains("main returned \(expected) both ways"),
                    "\(fixups): \(compared.stdout) \(compared.stderr)")
        }
        // Two launches (two processes) map the cache at the one base of this boot, from the copy slid for it.
        var bases: [String] = []
        for _ in 0..<2 {
            let launched = try jsonObject(try await Dyld3Binary.run(["launch", app, "--mode", "dyld3", "--json"] + common, limitSeconds: 120).stdout)
            let stats = try #require(launched["stats"] as? [String: Any])
            #expect(launched["result"] as? Int == expected && stats["shared_cache_images"] as? Int == fromRoot)
            bases.append(try #require(stats["shared_cache_base"] as? String))
        }
        #expect(bases[0] == bases[1])
        let copies = try FileManager.default.contentsOfDirectory(atPath: cache).filter { $0.hasSuffix(".dyld3slidcache") }
        #expect(copies.count == 1)
        let verified = try await Dyld3Binary.run(["verify", "--cache", cache], limitSeconds: 120)
        #expect(verified.status == 0, "\(verified.stdout)")
    }

    @Test func aRebuiltOrUntrustedCacheRefusesTheClosureAndAutoFallsBack() async throws {
        let (directory, app, root, cachePath, expected, cache, common) = try await Self.generated()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let installed = try await Dyld3Binary.run(["install", app] + common, limitSeconds: 120)
        #expect(installed.status == 0 && installed.stdout.contains("in the shared cache"), "\(installed.stdout) \(installed.stderr)")

        // Writable by others: refused in one line naming the cache.
        try FileManager.default.setAttributes([.posixPermissions: 0o666], ofItemAtPath: cachePath)
        let untrusted = try await Dyld3Binary.run(["launch", app, "--mode", "dyld3"] + common, limitSeconds: 120)
        #expect(untrusted.status != 0 && untrusted.stderr.contains(cachePath) && untrusted.stderr.contains("refused"), "\(untrusted.stderr)")
        try FileManager.default.setAttributes([.posixPermissions: 0o444], ofItemAtPath: cachePath)

        // Changed in place with its header kept (a byte of an image's code): the copy slid for
        // the boot is written only from bytes that hash to the UUID, so the launch is refused.
        let copies = try FileManager.default.contentsOfDirectory(atPath: cache).filter { $0.hasSuffix(".dyld3slidcache") }
        for copy in copies { try FileManager.default.removeItem(atPath: cache + "/" + copy) }
        let original = try Data(contentsOf: URL(fileURLWithPath: cachePath))
        var tampered = original
        tampered[original.count / 2] ^= 0xFF
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: cachePath)
        try tampered.write(to: URL(fileURLWithPath: cachePath))
        try FileManager.default.setAttributes([.posixPermissions: 0o444], ofItemAtPath: cachePath)
        let forged = try await Dyld3Binary.run(["launch", app, "--mode", "dyld3"] + common, limitSeconds: 120)
        #expect(forged.status != 0 && forged.stderr.contains(cachePath) && forged.stderr.contains("do not hash to its UUID"), "\(forged.stderr)")
        let fellBack = try await Dyld3Binary.run(["launch", app] + common, limitSeconds: 120)
        #expect(fellBack.status == 0 && fellBack.stdout.hasPrefix("path: dyld2") && fellBack.stdout.contains("main returned \(expected)"), "\(fellBack.stderr)")
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: cachePath)
        try original.write(to: URL(fileURLWithPath: cachePath))
        try FileManager.default.setAttributes([.posixPermissions: 0o444], ofItemAtPath: cachePath)

        // Rebuilt after a system framework changed: another UUID, the closure stale.
        try await Self.rebuiltCacheRefuses(app, mode: "dyld3", root: root, cachePath: cachePath, expected: expected, common: common)
        let verified = try await Dyld3Binary.run(["verify", "--cache", cache], limitSeconds: 120)
        #expect(verified.status == 4 && verified.stdout.contains("was rebuilt"), "\(verified.stdout)")
        // Installed again, it binds into the new build.
        let again = try await Dyld3Binary.run(["install", app] + common, limitSeconds: 120)
        #expect(again.status == 0 && again.stdout.contains("in the shared cache"))
        let launched = try await Dyld3Binary.run(["launch", app, "--mode", "dyld3"] + common, limitSeconds: 120)
        #expect(launched.status == 0 && launched.stdout.contains("main returned \(expected)"), "\(launched.stderr)")
    }
    /// A prelinked set installed over a root with a cache holds the app's own images only (the
    /// images dyld2 loads from outside the root) and binds into the cache: smaller than the set
    /// of every image, launched identical to dyld2 from the cache and from the files, main's
    /// result the generator's; a rebuilt cache makes it stale and `auto` falls back.
    @Test func aPrelinkedSetHoldsTheAppsOwnImagesAndBindsIntoTheCache() async throws {
        let (directory, app, root, cachePath, expected, cache, common) = try await Self.generated()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let whole = try await Self.installedClosure(app, ["--prelink", "--shared-cache", "none", "--root", root, "--cache", directory + "/whole"])
        let bound = try await Self.installedClosure(app, ["--prelink"] + common)
        let images = try #require(bound["images"] as? Int), inCache = try #require(bound["images_in_shared_cache"] as? Int)
        let slow = try jsonObject(try await Dyld3Binary.run(["launch", app, "--mode", "dyld2", "--json", "--shared-cache", "none"] + common,
                                                           limitSeconds: 120).stdout)
        let own = (slow["images"] as? [String] ?? []).count { !$0.hasPrefix(root + "/") }
        #expect(bound["shared_cache"] as? String == cachePath && inCache == Self.system + 1 && own == images - inCache)
        #expect(bound["prelinked_images"] as? Int == own && whole["prelinked_images"] as? Int == images)
        #expect((bound["prelinked_set_bytes"] as? Int ?? .max) < (whole["prelinked_set_bytes"] as? Int ?? 0), "\(bound) \(whole)")
        #expect(bound["slid_set"] is NSNull && whole["slid_set"] is String)

        // Byte for byte against dyld2 from the cache (eager; page-in falls back to eager, saying
        // why) and from the files.
        for (fixups, shared) in [("eager", "auto"), ("page-in", "auto"), ("eager", "none")] {
            let compared = try await Dyld3Binary.run(["compare", app, "--prelinked", "--fixups", fixups, "--shared-cache", shared] + common, limitSeconds: 120)
            #expect(compared.status == 0 && compared.stdout.contains(": identical: ") && compared.stdout.contains("main returned \(expected) both ways")
                        && compared.stdout.contains("binds into the shared cache"), "\(fixups) \(shared): \(compared.stdout) \(compared.stderr)")
        }
        let launched = try jsonObject(try await Dyld3Binary.run(["launch", app, "--mode", "prelinked", "--json"] + common, limitSeconds: 120).stdout)
        #expect(launched["result"] as? Int == expected && (launched["stats"] as? [String: Any])?["shared_cache_images"] as? Int == inCache, "\(launched)")
        let verified = try await Dyld3Binary.run(["verify", "--cache", cache], limitSeconds: 120)
        #expect(verified.status == 0 && verified.stdout.contains("1 prelinked sets"), "\(verified.stdout)")

        // A set whose cached image lies past the cache's region is refused in one line naming
        // the set, nothing mapped; `auto` launches with the closure.
        let setPath = try #require(bound["prelinked_set"] as? String)
        let opened = try PrelinkedSetFile.open(setPath)
        var forged = opened.set
        let cached = try #require(forged.closure.images.indices.last { forged.closure.images[$0].cacheSlot != nil })
        forged.closure.images[cached].cacheSlot?.offset = 1 << 40
        let data = try Array(opened.data().bytes(0, Int(opened.header.dataSize)))
        try FileManager.default.removeItem(atPath: setPath)
        try PrelinkedSetFile.write(forged, data: data, to: setPath)
        let refused = try await Dyld3Binary.run(["launch", app, "--mode", "prelinked"] + common, limitSeconds: 120)
        #expect(refused.status != 0 && refused.stderr.contains(setPath) && refused.stderr.contains("leaves the shared cache's")
                    && refused.stderr.split(separator: "\n").count == 1, "\(refused.stderr)")
        let fellBack = try await Dyld3Binary.run(["launch", app] + common, limitSeconds: 120)
        #expect(fellBack.status == 0 && fellBack.stdout.hasPrefix("path: dyld3") && fellBack.stdout.contains("main returned \(expected)"),
                "\(fellBack.stdout) \(fellBack.stderr)")
        let again = try await Dyld3Binary.run(["install", app, "--prelink"] + common, limitSeconds: 120)
        #expect(again.status == 0, "\(again.stderr)")

        // Rebuilt after a system framework changed: the set is stale, `auto` falls back.
        try await Self.rebuiltCacheRefuses(app, mode: "prelinked", root: root, cachePath: cachePath, expected: expected, common: common)
        let stale = try await Dyld3Binary.run(["verify", "--cache", cache], limitSeconds: 120)
        #expect(stale.status == 4 && stale.stdout.contains(".dyld3prelinked") && stale.stdout.contains("was rebuilt"), "\(stale.stdout)")
    }

    /// A `dlopen` of a bundle whose frameworks are mostly the system's takes those from the
    /// cache both ways: dyld2's, and dyld3's through a dlopen closure bound into the cache
    /// (built at run time and kept, or by `install --dlopen`); identical memory against dyld2
    /// from the cache and from the files, main's result the generator's.
    @Test func aDlopenTakesTheCachedDylibsFromTheCacheBothWays() async throws {
        let (directory, app, _, _, expected, _, common) = try await Self.generated(plugin: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let plugin = "@executable_path/PlugIns/Plugin.bundle/Plugin"
        let closure = try await Self.installedClosure(app, common)
        let closurePath = try #require(closure["closure"] as? String)
        #expect(closure["images"] as? Int == 2 && closure["images_in_shared_cache"] as? Int == 1)

        // Built at run time, bound into the cache and kept; the next launch opens through it.
        var vias: [String] = []
        for _ in 0..<2 {
            let launched = try jsonObject(try await Dyld3Binary.run(["launch", app, "--mode", "dyld3", "--json"] + common, limitSeconds: 120).stdout)
            let opened = try #require(((launched["stats"] as? [String: Any])?["dlopens"] as? [[String: Any]])?.first, "\(launched)")
            #expect(launched["result"] as? Int == expected && opened["requested"] as? String == plugin && (opened["loaded"] as? [String])?.count == Self.frameworks + 1)
            vias.append(opened["via"] as? String ?? "")
        }
        #expect(vias == ["runtime closure", "closure"])
        let dump = try await Dyld3Binary.run(["closure", "dump", closurePath], limitSeconds: 60)
        #expect(dump.stdout.components(separatedBy: "(in the shared cache, ").count - 1 == Self.system, "\(dump.stdout.suffix(2000))")
        for shared in ["auto", "none"] {
            let compared = try await Dyld3Binary.run(["compare", app, "--dlopen", plugin, "--shared-cache", shared] + common, limitSeconds: 120)
            #expect(compared.status == 0 && compared.stdout.contains(": identical: ") && compared.stdout.contains("main returned \(expected) both ways")
                        && compared.stdout.contains("\(Self.frameworks + 1) images by closure"), "\(shared): \(compared.stdout) \(compared.stderr)")
        }
        // Built by install, the same way.
        let installed = try await Dyld3Binary.run(["install", app, "--dlopen", plugin] + common, limitSeconds: 120)
        #expect(installed.status == 0 && installed.stdout.contains("1 dlopen closures"), "\(installed.stdout) \(installed.stderr)")
        let again = try await Dyld3Binary.run(["closure", "dump", closurePath], limitSeconds: 60)
        #expect(again.stdout.components(separatedBy: "(in the shared cache, ").count - 1 == Self.system)
        let compared = try await Dyld3Binary.run(["compare", app, "--dlopen", plugin, "--shared-cache", "auto"] + common, limitSeconds: 120)
        #expect(compared.status == 0 && compared.stdout.contains(": identical: ") && compared.stdout.contains("main returned \(expected) both ways"),
                "\(compared.stdout) \(compared.stderr)")

        // A dlopen closure whose cached image lies past the cache's region is refused before
        // anything is written: the dlopen builds one at run time instead.
        var forged = try ClosureFile.read(closurePath)
        var nested = try forged.dlopens[0].closure(within: forged, path: closurePath)
        let cached = try #require(nested.images.indices.last { nested.images[$0].cacheSlot != nil })
        nested.images[cached].cacheSlot?.offset = 1 << 40
        forged.dlopens[0] = ClosureDlopen(requested: forged.dlopens[0].requested, resolvedPath: forged.dlopens[0].resolvedPath,
                                          opened: forged.dlopens[0].opened, body: nested.encodedBody())
        try ClosureFile.write(forged, to: closurePath)
        let refused = try jsonObject(try await Dyld3Binary.run(["launch", app, "--mode", "dyld3", "--json"] + common, limitSeconds: 120).stdout)
        let rebuilt = ((refused["stats"] as? [String: Any])?["dlopens"] as? [[String: Any]])?.first
        #expect(refused["result"] as? Int == expected && rebuilt?["via"] as? String == "runtime closure", "\(refused)")
    }

    @Test func dyld2TakesTheCachedDylibsFromTheCacheAndFallsBackToTheFiles() async throws {
        let (directory, app, _, cachePath, expected, cache, common) = try await Self.generated()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let closure = try await Self.installedClosure(app, common)
        let cached = try #require(closure["images_in_shared_cache"] as? Int)
        #expect(cached == Self.system + 1 && (closure["shared_cache_patches"] as? Int ?? 0) > 0)

        // From the cache (auto, the default): every system dylib, main's result the generator's.
        let slow = try jsonObject(try await Dyld3Binary.run(["launch", app, "--mode", "dyld2", "--json"] + common, limitSeconds: 120).stdout)
        let stats = try #require(slow["stats"] as? [String: Any])
        #expect(slow["result"] as? Int == expected && stats["shared_cache_images"] as? Int == cached, "\(slow)")
        #expect(slow["shared_cache_refusal"] is NSNull)
        let files = try jsonObject(try await Dyld3Binary.run(["launch", app, "--mode", "dyld2", "--json", "--shared-cache", "none"] + common,
                                                            limitSeconds: 120).stdout)
        #expect(files["result"] as? Int == expected && (files["stats"] as? [String: Any])?["shared_cache_images"] is NSNull)

        // dyld2 from the cache against dyld3 from the cache: memory byte for byte, the cache's
        // patches word for word, main's result.
        let compared = try await Dyld3Binary.run(["compare", app, "--shared-cache", "auto"] + common, limitSeconds: 120)
        #expect(compared.status == 0 && compared.stdout.contains(": identical: ") && compared.stdout.contains("main returned \(expected) both ways"),
                "\(compared.stdout) \(compared.stderr)")

        // Changed in place with its header kept, and no copy slid for the boot yet: auto loads
        // from the files (one line naming the cache), a cache named by its path fails.
        let copies = try FileManager.default.contentsOfDirectory(atPath: cache).filter { $0.hasSuffix(".dyld3slidcache") }
        for copy in copies { try FileManager.default.removeItem(atPath: cache + "/" + copy) }
        var tampered = try Data(contentsOf: URL(fileURLWithPath: cachePath))
        tampered[tampered.count / 2] ^= 0xFF
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: cachePath)
        try tampered.write(to: URL(fileURLWithPath: cachePath))
        try FileManager.default.setAttributes([.posixPermissions: 0o444], ofItemAtPath: cachePath)
        let fellBack = try await Dyld3Binary.run(["launch", app, "--mode", "dyld2"] + common, limitSeconds: 120)
        #expect(fellBack.status == 0 && fellBack.stdout.hasPrefix("path: dyld2") && !fellBack.stdout.contains("from the shared cache")
                && fellBack.stdout.contains("main returned \(expected)"), "\(fellBack.stdout)")
        #expect(fellBack.stderr.contains("shared cache not used") && fellBack.stderr.contains(cachePath) && fellBack.stderr.contains("do not hash to its UUID"),
                "\(fellBack.stderr)")
        let named = try await Dyld3Binary.run(["launch", app, "--mode", "dyld2", "--shared-cache", cachePath] + common, limitSeconds: 120)
        #expect(named.status != 0 && named.stderr.contains(cachePath), "\(named.stderr)")
    }
}
