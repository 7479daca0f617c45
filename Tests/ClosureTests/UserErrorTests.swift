import TestSupport
import Foundation
import Testing

/// What a user sees when a command cannot do its work: one line `dyld3: WHAT: WHY`, with the
/// fix when there is one, exit status 1, and never the usage text.
extension ClosureTests {
    static func fixture(_ name: String, _ variant: String = "x86_64-chained") throws -> FixtureApp {
        try #require(apps.first { $0.name == name && $0.variant == variant }, "build the fixtures: make fixtures")
    }

    /// Asserts `result` is exactly one failure line, `line`, with status 1 and no usage text.
    static func expectFailure(_ result: Dyld3Binary.Result, _ line: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(result.status == 1, "\(result.status): \(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stderr == line + "\n", sourceLocation: sourceLocation)
        #expect(!result.stderr.contains("USAGE") && !result.stderr.contains("Usage"), sourceLocation: sourceLocation)
    }

    /// Launching a fixture app without `--root`: the missing system library is named, and
    /// the fix is the `--root` beside the app.
    @Test func missingSystemLibraryWithoutRootSuggestsRoot() async throws {
        let app = try Self.fixture("basic")
        let cache = try Scratch.directory("no-root")
        defer { Scratch.remove(cache) }
        let result = try await Dyld3Binary.run(["launch", app.bundle, "--cache", cache, "--mode", "dyld2"], limitSeconds: 60)
        let relativeRoot = (app.bundle as NSString).deletingLastPathComponent + "/root"
        Self.expectFailure(result, "dyld3: /usr/lib/libSystem.B.dylib: library not loaded (referenced from \(app.executable); "
            + "tried /usr/lib/libSystem.B.dylib); give --root DIR, the system root that holds /usr/lib/libSystem.B.dylib "
            + "(for this app: --root \(relativeRoot))")
        #expect(relativeRoot == app.root)
    }

    /// With a `--root` given, a missing library gets no `--root` advice.
    @Test func missingLibraryUnderRootHasNoRootAdvice() async throws {
        let app = try Self.fixture("missing-dylib")
        let result = try await Dyld3Binary.run(["launch", app.bundle, "--root", app.root, "--mode", "dyld2"], limitSeconds: 60)
        #expect(result.status == 1)
        #expect(result.stderr.hasPrefix("dyld3: ") && result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        #expect(result.stderr.contains("library not loaded") && !result.stderr.contains("--root"), "\(result.stderr)")
    }

    /// A `--root` that does not exist is reported as such, by launch, compare and install.
    @Test func missingRootDirectoryIsReported() async throws {
        let app = try Self.fixture("basic")
        let root = "/nonexistent-dyld3-root-\(UUID().uuidString)"
        let cache = try Scratch.directory("bad-root")
        defer { Scratch.remove(cache) }
        for command in ["launch", "compare", "install"] {
            let result = try await Dyld3Binary.run([command, app.bundle, "--root", root, "--cache", cache], limitSeconds: 60)
            Self.expectFailure(result, "dyld3: --root \(root): no such directory")
        }
    }

    /// `--mode dyld3` with no closure says how to make one, with the same root and cache.
    @Test func noClosureSaysToInstall() async throws {
        let app = try Self.fixture("basic")
        let cache = try Scratch.directory("none")
        defer { Scratch.remove(cache) }
        let result = try await Dyld3Binary.run(["launch", app.bundle, "--root", app.root, "--cache", cache, "--mode", "dyld3"], limitSeconds: 60)
        #expect(result.status == 1)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].hasPrefix("dyld3: --mode dyld3: \(cache)/") && lines[0].hasSuffix(
            ": no closure; run `dyld3 install \(app.bundle) --root \(app.root) --cache \(cache)` first"), "\(result.stderr)")
    }

    /// The private key given to --trust, or the package key to --sign, is named as the
    /// mix-up it is, in one line with exit status 1 (not a usage error).
    @Test func swappedKeyFilesAreNamed() async throws {
        let app = try Self.fixture("basic")
        let keys = try Scratch.directory("keys")
        let cache = try Scratch.directory("keys-cache")
        defer { Scratch.remove(keys); Scratch.remove(cache) }
        let generated = try await Dyld3Binary.run(["key", "generate", "--out", keys])
        #expect(generated.status == 0, "\(generated.stderr)")
        let privateKey = keys + "/closure-signing.key", packageKey = keys + "/closure-signing.pub"

        let trust = try await Dyld3Binary.run(["launch", app.bundle, "--root", app.root, "--cache", cache, "--trust", privateKey], limitSeconds: 60)
        Self.expectFailure(trust, "dyld3: --trust \(privateKey): is the private signing key, not the package key: "
            + "trusting takes the .pub file (--trust closure-signing.pub); the .key file is for --sign")

        let sign = try await Dyld3Binary.run(["install", app.bundle, "--root", app.root, "--cache", cache, "--sign", packageKey], limitSeconds: 60)
        Self.expectFailure(sign, "dyld3: --sign \(packageKey): is the trust (public) key, not the private signing key: "
            + "signing takes the .key file (--sign closure-signing.key); the .pub file is for --trust")

        let verify = try await Dyld3Binary.run(["verify", "--cache", cache, "--trust", privateKey], limitSeconds: 60)
        #expect(verify.status == 1 && verify.stderr.hasPrefix("dyld3: --trust \(privateKey): is the private signing key"), "\(verify.stderr)")
    }

    /// `inspect` takes several files and an .app (its executable); a missing file is named
    /// as the other commands name it, and the others are still inspected.
    @Test func inspectTakesSeveralFilesAndAnApp() async throws {
        let app = try Self.fixture("basic")
        let bundle = try await Dyld3Binary.run(["inspect", "--deps", app.bundle], limitSeconds: 60)
        let executable = try await Dyld3Binary.run(["inspect", "--deps", app.executable], limitSeconds: 60)
        #expect(bundle.status == 0 && !bundle.stdout.isEmpty, "\(bundle.stderr)")
        #expect(bundle.stdout == executable.stdout)

        let missing = "/nonexistent-dyld3-file-\(UUID().uuidString)"
        let both = try await Dyld3Binary.run(["inspect", "--deps", missing, app.executable], limitSeconds: 60)
        Self.expectFailure(both, "dyld3: \(missing): no such file or directory")
        #expect(both.stdout == executable.stdout)

        let launch = try await Dyld3Binary.run(["launch", missing], limitSeconds: 60)
        Self.expectFailure(launch, "dyld3: \(missing): no such file or directory")
        let stubRoot = try await Dyld3Binary.run(["stub-root", missing, "--out", missing + "-root"], limitSeconds: 60)
        Self.expectFailure(stubRoot, "dyld3: \(missing): no such file or directory")
    }

    /// Installing a directory of apps ends with `installed N, failed M: APP (WHY); …`.
    @Test func installOfManyAppsEndsWithASummary() async throws {
        let app = try Self.fixture("basic")
        let directory = (app.bundle as NSString).deletingLastPathComponent
        let cache = try Scratch.directory("summary")
        defer { Scratch.remove(cache) }
        let result = try await Dyld3Binary.run(["install", directory, "--root", app.root, "--cache", cache], limitSeconds: 300)
        let variant = Self.apps.filter { $0.variant == app.variant }
        let failing = variant.filter { !$0.launches }.sorted { $0.name < $1.name }
        #expect(result.status == (failing.isEmpty ? 0 : 1))
        let summary = try #require(result.lines.last)
        #expect(summary.hasPrefix("installed \(variant.count - failing.count), failed \(failing.count): \(directory)/\(failing[0].name).app ("), "\(summary)")
        for failed in failing { #expect(summary.contains("\(directory)/\(failed.name).app ("), "\(summary)") }
        #expect(result.lines.count == variant.count - failing.count + 1)
    }

    /// `bench` writes under build/ unless told otherwise: the committed results are `make bench`'s.
    @Test func benchWritesUnderBuildByDefault() async throws {
        let help = try await Dyld3Binary.run(["bench", "--help"], limitSeconds: 60)
        let words = help.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(words.contains("(default: build/bench/results)"), "\(help.stdout)")
    }
}

extension ClosureTests {
    /// `compare` says what it counts: fixup locations (the last write to each) of the fixups
    /// written, and the fixups written are the rebases plus binds `install` reports. On the
    /// opcode-based weak-coalesce app some locations are written twice (a rebase, then a weak bind).
    @Test func compareCountsAgreeWithInstall() async throws {
        let app = try Self.fixture("weak-coalesce", "x86_64-opcodes")
        let cache = try Scratch.directory("counts")
        defer { Scratch.remove(cache) }
        let install = try await Dyld3Binary.run(["install", app.bundle, "--root", app.root, "--cache", cache], limitSeconds: 60)
        #expect(install.status == 0, "\(install.stderr)")
        let words = try #require(install.lines.first).split(separator: " ")
        let rebases = try #require(words.firstIndex(of: "rebases,").flatMap { Int(words[$0 - 1]) })
        let binds = try #require(words.firstIndex(of: "binds").flatMap { Int(words[$0 - 1]) })
        let compare = try await Dyld3Binary.run(["compare", app.bundle, "--root", app.root, "--cache", cache, "--json"], limitSeconds: 60)
        let json = try #require(compare.json, "\(compare.stdout)\(compare.stderr)")
        let written = try #require(json["fixups_written"] as? Int)
        let locations = try #require(json["fixups_compared"] as? Int)
        #expect(written == rebases + binds)
        #expect(locations < written, "weak-coalesce writes some locations twice")
        let text = try await Dyld3Binary.run(["compare", app.bundle, "--root", app.root, "--cache", cache], limitSeconds: 60)
        #expect(text.stdout.contains(", \(locations) fixup locations (of \(written) fixups written), "), "\(text.stdout)")
    }
}
