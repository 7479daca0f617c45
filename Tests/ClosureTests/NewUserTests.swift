import TestSupport
import Foundation
import Testing

/// What a new user types first, and what each command must then say: the version, the
/// nearest subcommand to a mistyped one, the stub root a real module needs, which loader
/// path ran, counts that add up, and the same data in text and JSON.
extension ClosureTests {
    static let universalModule = Paths.corpus.appendingPathComponent("fat_universal2/_cext.cpython-311-darwin.so").path
    static let opcodeModule = Paths.corpus.appendingPathComponent("opcodes_x86_64/libgcc_s.1.1.dylib").path

    @Test func versionAndMistypedSubcommands() async throws {
        let version = try await Dyld3Binary.run(["--version"], limitSeconds: 60)
        #expect(version.status == 0 && version.stdout.hasPrefix("dyld3 ") && version.stdout.contains("closure format "), "\(version.stdout)")

        let mistyped = try await Dyld3Binary.run(["lauch", "x.app"], limitSeconds: 60)
        #expect(mistyped.status == 64, "\(mistyped.status)")
        #expect(mistyped.stderr == "dyld3: lauch: no such subcommand of dyld3; did you mean `dyld3 launch`?\n", "\(mistyped.stderr)")
        let nested = try await Dyld3Binary.run(["closure", "dupm", "f"], limitSeconds: 60)
        #expect(nested.stderr == "dyld3: dupm: no such subcommand of dyld3 closure; did you mean `dyld3 closure dump`?\n", "\(nested.stderr)")
        let unknown = try await Dyld3Binary.run(["frobnicate"], limitSeconds: 60)
        #expect(unknown.status == 64 && unknown.stderr.contains("the subcommands are inspect, install, launch"), "\(unknown.stderr)")
    }

    /// A real module launched with no `--root`: the fix names `dyld3 stub-root`, the command
    /// that makes a root for it.
    @Test func missingLibraryOfARealModuleNamesStubRoot() async throws {
        let cache = try Scratch.directory("stub-root-fix")
        defer { Scratch.remove(cache) }
        let result = try await Dyld3Binary.run(["launch", Self.universalModule, "--cache", cache, "--mode", "dyld2"], limitSeconds: 60)
        #expect(result.status == 1)
        #expect(result.stderr.hasPrefix("dyld3: /usr/lib/") && result.stderr.contains("library not loaded"), "\(result.stderr)")
        #expect(result.stderr.hasSuffix("make one: `dyld3 stub-root \(Self.universalModule) --out DIR` (docs/stub-roots.md)\n"), "\(result.stderr)")
    }

    /// Every subcommand `dyld3 --help` lists (and each of theirs) has its line in README's
    /// command list.
    @Test func readmeListsEverySubcommand() async throws {
        func subcommands(_ help: String) -> [String] {
            guard let start = help.range(of: "SUBCOMMANDS:\n") else { return [] }
            // A name starts its line after two spaces; a wrapped description is indented further.
            return help[start.upperBound...].split(separator: "\n", omittingEmptySubsequences: false).prefix { $0.hasPrefix("  ") }
                .filter { !$0.hasPrefix("   ") }.compactMap { line in line.split(separator: " ").first.map(String.init) }
        }
        let readme = try String(contentsOf: Paths.repoRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let top = subcommands(try await Dyld3Binary.run(["--help"], limitSeconds: 60).stdout)
        #expect(top.count >= 11, "\(top)")
        for command in top where command != "help" {
            let nested = subcommands(try await Dyld3Binary.run([command, "--help"], limitSeconds: 60).stdout).filter { $0 != "help" }
            for line in nested.isEmpty ? ["dyld3 \(command) "] : nested.map({ "dyld3 \(command) \($0) " }) {
                #expect(readme.contains("\n" + line), "README lists no `\(line)…`")
            }
        }
    }

    /// `launch` names the path that ran, and `--json`'s `slid_for_boot` is one value at its
    /// top and under `stats`.
    @Test func launchNamesThePathThatRan() async throws {
        let app = try Self.fixture("basic")
        let cache = try Scratch.directory("path-line")
        defer { Scratch.remove(cache) }
        let install = try await Dyld3Binary.run(["install", app.bundle, "--root", app.root, "--cache", cache, "--prelink"], limitSeconds: 60)
        #expect(install.status == 0, "\(install.stderr)")
        let closure = try #require(try FileManager.default.contentsOfDirectory(atPath: cache).first { $0.hasSuffix(".dyld3closure") })
        let set = closure.replacingOccurrences(of: ".dyld3closure", with: ".dyld3prelinked")
        for (mode, line) in [("dyld2", "path: dyld2, the slow path"), ("dyld3", "path: dyld3, closure \(cache)/\(closure)"),
                             ("prelinked", "path: prelinked, set \(cache)/\(set) (")] {
            let result = try await Dyld3Binary.run(["launch", app.bundle, "--root", app.root, "--cache", cache, "--mode", mode], limitSeconds: 60)
            #expect(result.status == 0 && result.lines.first?.hasPrefix(line) == true, "\(mode): \(result.stdout)\(result.stderr)")
            #expect(result.lines.last?.hasPrefix("main returned ") == true, "\(result.stdout)")
            let json = try await Dyld3Binary.run(["launch", app.bundle, "--root", app.root, "--cache", cache, "--mode", mode, "--json"], limitSeconds: 60)
            let top = json.json?["slid_for_boot"], stats = (json.json?["stats"] as? [String: Any])?["slid_for_boot"]
            #expect(json.json?["mode"] as? String == mode)
            #expect(mode == "prelinked" ? (top as? Bool != nil && top as? Bool == stats as? Bool) : (top is NSNull && stats is NSNull), "\(json.stdout)")
        }
    }

    /// `verify`'s summary: closures and sets add up to the files, the statuses add up to
    /// them too under the names `--json` counts them under, and a stale set names the
    /// install that refreshes it.
    @Test func verifyCountsAddUpAndAgreeWithJSON() async throws {
        let original = try Self.fixture("basic")
        let app = try original.scratchCopy()
        defer { Scratch.remove(app.directory.path) }
        let cache = try Scratch.directory("verify-counts")
        defer { Scratch.remove(cache) }
        let install = try await Dyld3Binary.run(["install", app.bundle, "--root", app.root, "--cache", cache, "--prelink"], limitSeconds: 60)
        #expect(install.status == 0, "\(install.stderr)")
        _ = try await Dyld3Binary.run(["launch", app.bundle, "--root", app.root, "--cache", cache, "--mode", "prelinked"], limitSeconds: 60)
        try Scratch.write(Array("notes".utf8), to: cache + "/notes.txt")
        var times = [timespec(tv_sec: time(nil) - 100, tv_nsec: 0), timespec(tv_sec: time(nil) - 100, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, app.executable, &times, 0) == 0)

        let text = try await Dyld3Binary.verify(cache)
        let json = try await Dyld3Binary.verify(cache, json: true)
        let counts = try #require(json.json?["counts"] as? [String: Int], "\(json.stdout)")
        let summary = try #require(text.lines.last)
        #expect(summary == "verify: \(counts["closures"]!) closures and \(counts["prelinked_sets"]!) prelinked sets (1 slid for a boot), "
            + "\(counts["valid"]!) valid, \(counts["corrupt"]!) corrupt, \(counts["stale"]!) stale, \(counts["not_a_closure"]!) not-a-closure", "\(summary)")
        #expect(counts["files"] == 4 && counts["closures"]! + counts["prelinked_sets"]! == counts["files"])
        let statuses = ["valid", "corrupt", "stale", "incompatible", "not_a_closure", "untrusted", "invalid", "misplaced"]
        #expect(statuses.map { counts[$0] ?? -1 }.reduce(0, +) == counts["files"], "\(counts)")
        #expect(counts["stale"] == 1 && counts["not_a_closure"] == 1, "\(counts)")
        let refresh = try #require(text.lines.first { $0.contains(": refresh: ") }, "\(text.stdout)")
        #expect(refresh.hasSuffix(": refresh: `dyld3 install \(app.executable) --root \(app.root) --arch x86_64 --cache \(cache) --prelink`"), "\(refresh)")
    }

    /// `inspect --json --dyld-info` on an opcode-based module carries the rows the text prints.
    @Test func inspectJSONCarriesOpcodeFixups() async throws {
        let text = try await Dyld3Binary.run(["inspect", "--dyld-info", Self.opcodeModule], limitSeconds: 60)
        let json = try await Dyld3Binary.run(["inspect", "--dyld-info", "--json", Self.opcodeModule], limitSeconds: 60)
        let rows = try #require(((json.json?["slices"] as? [[String: Any]])?.first?["dyld_info"]) as? [[String: Any]], "\(json.stdout.prefix(300))")
        let textRows = text.lines.dropFirst(3)
        #expect(!rows.isEmpty && rows.count == textRows.count, "\(rows.count) JSON rows, \(textRows.count) text rows")
        for (row, line) in zip(rows, textRows) {
            let address = try #require(row["address"] as? Int)
            #expect(line.contains(" 0x" + String(address, radix: 16) + " "), "\(row) against \(line)")
            if let symbol = row["symbol"] as? String { #expect(line.contains(" " + symbol), "\(row) against \(line)") }
        }
    }

    /// `launch --repeat N`: N launches in one process, the median and spread of pre-main and
    /// total, the same in JSON (each sample listed, the median among them).
    @Test func launchRepeatPrintsMedianAndSpread() async throws {
        let app = try Self.fixture("basic")
        let result = try await Dyld3Binary.run(["launch", app.bundle, "--root", app.root, "--mode", "dyld2", "--repeat", "5"], limitSeconds: 120)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.lines.contains("repeat: 5 launches in this process"), "\(result.stdout)")
        #expect(result.lines.contains { $0.hasPrefix("  pre-main: median ") && $0.contains(" ms, min ") && $0.contains(" ms, max ") }, "\(result.stdout)")
        #expect(result.lines.contains { $0.hasPrefix("  total:    median ") }, "\(result.stdout)")
        let json = try await Dyld3Binary.run(["launch", app.bundle, "--root", app.root, "--mode", "dyld2", "--repeat", "3", "--json"], limitSeconds: 120)
        let repeated = try #require(json.json?["repeat"] as? [String: Any], "\(json.stdout)")
        #expect(repeated["launches"] as? Int == 3)
        for key in ["pre_main_ns", "total_ns"] {
            let spread = try #require(repeated[key] as? [String: Any])
            let samples = try #require(spread["samples"] as? [Int])
            #expect(samples.count == 3 && spread["median"] as? Int == samples.sorted()[1])
            #expect(spread["min"] as? Int == samples.min() && spread["max"] as? Int == samples.max())
        }
        let zero = try await Dyld3Binary.run(["launch", app.bundle, "--repeat", "0"], limitSeconds: 60)
        #expect(zero.status == 64 && zero.stderr.contains("--repeat 0"), "\(zero.stderr)")
    }

    /// `install` of a universal module writes one closure per architecture; `--arch` one.
    @Test func installWritesEveryArchitecture() async throws {
        let scratch = try Scratch.directory("universal")
        defer { Scratch.remove(scratch) }
        let stubs = try await Dyld3Binary.run(["stub-root", Self.universalModule, "--out", scratch + "/root"], limitSeconds: 300)
        #expect(stubs.status == 0, "\(stubs.stderr)")
        let all = try await Dyld3Binary.run(["install", Self.universalModule, "--root", scratch + "/root", "--cache", scratch + "/all", "--json"],
                                            limitSeconds: 120)
        let arches = ((all.json?["closures"] as? [[String: Any]]) ?? []).compactMap { $0["arch"] as? String }
        #expect(all.status == 0 && Set(arches) == ["x86_64", "arm64"], "\(all.stdout)\(all.stderr)")
        let files = try FileManager.default.contentsOfDirectory(atPath: scratch + "/all").filter { $0.hasSuffix(".dyld3closure") }
        #expect(files.count == 2, "\(files)")
        let one = try await Dyld3Binary.run(["install", Self.universalModule, "--root", scratch + "/root", "--cache", scratch + "/one", "--arch", "arm64"],
                                            limitSeconds: 120)
        #expect(one.status == 0 && one.lines.count == 1 && one.lines[0].contains(" [arm64]: "), "\(one.stdout)\(one.stderr)")
    }

    /// `closure dump` names the symbol each bind target is, in text and JSON.
    @Test func closureDumpNamesBindSymbols() async throws {
        let app = try Self.fixture("basic")
        let cache = try Scratch.directory("dump-names")
        defer { Scratch.remove(cache) }
        let path = try app.install(into: cache)
        let text = try await Dyld3Binary.run(["closure", "dump", path], limitSeconds: 60)
        #expect(text.stdout.contains("bind -> image 2 (Util) +0x") && text.stdout.contains(" _util_scale\n"), "\(text.stdout)")
        let json = try await Dyld3Binary.run(["closure", "dump", path, "--json"], limitSeconds: 60)
        let targets = try #require(json.json?["bind_targets"] as? [[String: Any]])
        #expect(targets.contains { $0["symbol"] as? String == "_util_scale" }, "\(targets)")
    }
}
