@testable import ClosureFormat
import ClosureBuild
import Dyld2
import Dyld3
import Foundation
import ClosureCache
import LaunchPlan
import LoaderCore
import MachOReader
import ProcessRunner
import TestSupport
import Testing

/// The signature policies (docs/code-signing.md, "Policy"): `--require-signatures` refuses an
/// unsigned image, `--library-validation` any image not signed with the main executable's
/// team ID (platform binaries excepted), in dyld2, at install, in the fast path (from what
/// the closure recorded) and under `auto`; a closure records the policy it was built under
/// and is not used for a launch asking for another. The fixtures are ad-hoc signed by
/// ld64.lld (no team ID); unsigned copies lose `LC_CODE_SIGNATURE` (llvm-objdump is the
/// oracle that it is gone), and team-ID signatures are written by
/// tools/damage-code-signature (Python's hashlib), independent of the project's reader.
@Suite(.serialized, .bounded) struct SigningPolicyTests {
    static let requireSignatures = SigningPolicy(requireSignatures: true)
    static let libraryValidation = SigningPolicy(libraryValidation: true)

    /// An unsigned framework: the default launches it in every path; `--require-signatures`
    /// refuses it in dyld2 and install, naming the image and the rule; a closure installed
    /// under the default is not used for a launch that requires signatures (`--mode dyld3`
    /// says which binding field differs, `auto` falls back to dyld2, which refuses).
    @Test func requireSignaturesRefusesAnUnsignedImage() async throws {
        let app = try FixtureApp.named("basic").scratchCopy()
        defer { try? FileManager.default.removeItem(at: app.directory) }
        let cache = try Scratch.directory("policy-require")
        defer { Scratch.remove(cache) }
        let util = app.bundle + "/Frameworks/Util.framework/Util"
        try await Self.removeSignature(util)
        #expect(try await Dyld3Binary.run(["codesign", "verify", util], limitSeconds: 60).status == 2)

        let refusal = "\(util): refused by --require-signatures: the image is unsigned"
        let base = ["--root", app.root, "--cache", cache, app.bundle]
        let dyld2 = try await Dyld3Binary.run(["launch", "--mode", "dyld2"] + base, limitSeconds: 60)
        #expect(dyld2.status == 0, "\(dyld2.stderr)")
        let strict2 = try await Dyld3Binary.run(["launch", "--mode", "dyld2", "--require-signatures"] + base, limitSeconds: 60)
        #expect(strict2.status != 0 && strict2.stderr.contains(refusal) && !strict2.stdout.contains("main returned"), "\(strict2.stderr)")
        let strictInstall = try await Dyld3Binary.run(["install", "--require-signatures"] + base, limitSeconds: 60)
        #expect(strictInstall.status != 0 && strictInstall.stderr.contains(refusal), "\(strictInstall.stderr)")

        let install = try await Dyld3Binary.run(["install"] + base, limitSeconds: 60)
        try #require(install.status == 0, "\(install.stderr)")
        let dyld3 = try await Dyld3Binary.run(["launch", "--mode", "dyld3", "--json"] + base, limitSeconds: 60)
        #expect(dyld3.status == 0 && dyld3.json?["fallback_reason"] is NSNull, "\(dyld3.stderr)")
        let strict3 = try await Dyld3Binary.run(["launch", "--mode", "dyld3", "--require-signatures"] + base, limitSeconds: 60)
        #expect(strict3.status != 0 && strict3.stderr.contains("built for another policy: default, this launch asks for require-signatures"),
                "\(strict3.stderr)")
        let auto = try await Dyld3Binary.run(["launch", "--mode", "auto", "--require-signatures"] + base, limitSeconds: 60)
        #expect(auto.status != 0 && auto.stderr.contains("closure not used") && auto.stderr.contains(refusal)
                && !auto.stdout.contains("main returned"), "\(auto.stderr)")
    }

    /// The same rule in process, each path on its own: dyld2 and the builder refuse the
    /// unsigned image; the fast path, given a closure whose binding claims the policy while
    /// its records hold the unsigned image (a closure install would not write), refuses it
    /// from those records before anything is mapped, eager and page-in alike.
    @Test func theFastPathEnforcesThePolicyFromTheClosuresRecords() async throws {
        let app = try FixtureApp.named("basic").scratchCopy()
        defer { try? FileManager.default.removeItem(at: app.directory) }
        let util = app.bundle + "/Frameworks/Util.framework/Util"
        try await Self.removeSignature(util)
        let expected = LoadError.signingPolicy(path: util, rule: .requireSignatures,
                                               why: "the image is unsigned; every image must carry a valid signature")
        var request = LaunchOptions(roots: [app.executable], arch: app.arch, root: app.root, run: false)
        request.signingPolicy = Self.requireSignatures
        #expect(throws: expected) { _ = try SlowPath.launch(request) }
        #expect(throws: expected) { _ = try ClosureBuilder.build(roots: [app.executable], arch: app.arch, root: app.root, policy: Self.requireSignatures) }

        var closure = try app.closure()
        #expect(closure.binding.policy == .default)
        #expect(closure.images.contains { $0.path == util && $0.identity.signature == nil })
        closure.binding.policy = Self.requireSignatures
        let cache = try Scratch.directory("policy-records")
        defer { Scratch.remove(cache) }
        let path = ClosureCache(directory: cache).closurePath(forApp: app.executable, arch: app.arch)
        try ClosureFile.write(closure, to: path)
        for fixups in FixupsMode.allCases {
            request.fixups = fixups
            #expect(throws: expected, "\(fixups)") { _ = try FastPath.launch(closurePath: path, request: request) }
        }
        // Library validation from the records alike: the fixture's images are ld64.lld's ad
        // hoc signatures, the first after the main executable is refused.
        var adhoc = try FixtureApp.named("basic").closure()
        adhoc.binding.policy = Self.libraryValidation
        let adhocPath = ClosureCache(directory: cache).closurePath(forApp: adhoc.images[0].path, arch: app.arch)
        try ClosureFile.write(adhoc, to: adhocPath)
        var validating = LaunchOptions(roots: [adhoc.images[0].path], arch: app.arch, root: try FixtureApp.named("basic").root, run: false)
        validating.signingPolicy = Self.libraryValidation
        #expect { _ = try FastPath.launch(closurePath: adhocPath, request: validating) } throws: { error in
            guard let error = error as? LoadError, case let .signingPolicy(path, rule, why) = error else { return false }
            return path == adhoc.images[1].path && rule == .libraryValidation && why.hasPrefix("signed ad hoc (no team ID)")
        }

        // The default asks nothing of the records, and the binding names another policy.
        request.signingPolicy = .default
        #expect { _ = try FastPath.launch(closurePath: path, request: request) } throws: { error in
            guard let error = error as? ClosureError, case let .mismatch(_, field, expectedName, found) = error else { return false }
            return field == .policy && expectedName == "default" && found == "require-signatures"
        }
    }

    /// Library validation over ld64.lld's ad-hoc signatures refuses the first image after
    /// the main executable (no team ID). With every image signed with one team ID the app
    /// launches in dyld2, installs, launches from its closure and compares identical; a
    /// framework signed with another team ID is then refused by dyld2 and install, and by
    /// `auto` (the closure is stale, dyld2 refuses); one with no team ID but a platform
    /// binary's `platform` field is accepted, and without it refused.
    @Test func libraryValidationAcceptsOnlyTheMainExecutablesTeamID() async throws {
        let app = try FixtureApp.named("basic").scratchCopy()
        defer { try? FileManager.default.removeItem(at: app.directory) }
        let cache = try Scratch.directory("policy-library")
        defer { Scratch.remove(cache) }
        let base = ["--root", app.root, "--cache", cache, app.bundle]
        let images = try app.closure().images.map(\.path)
        try #require(images.count >= 3 && images[0] == app.executable)
        let adhoc = try await Dyld3Binary.run(["launch", "--mode", "dyld2", "--library-validation"] + base, limitSeconds: 60)
        #expect(adhoc.status != 0 && adhoc.stderr.contains("\(images[1]): refused by --library-validation: signed ad hoc (no team ID), and not a platform binary"),
                "\(adhoc.stderr)")
        let adhocInstall = try await Dyld3Binary.run(["install", "--library-validation"] + base, limitSeconds: 60)
        #expect(adhocInstall.status != 0 && adhocInstall.stderr.contains("\(images[1]): refused by --library-validation"), "\(adhocInstall.stderr)")

        try await Self.resign(images, team: "TEAMID1234")
        let result = try app.expectedResult
        let dyld2 = try await Dyld3Binary.run(["launch", "--mode", "dyld2", "--library-validation", "--json"] + base, limitSeconds: 60)
        #expect(dyld2.status == 0 && (dyld2.json?["result"] as? Int).map(Int32.init) == result, "\(dyld2.stderr)")
        let install = try await Dyld3Binary.run(["install", "--library-validation"] + base, limitSeconds: 60)
        try #require(install.status == 0, "\(install.stderr)")
        let closure = try ClosureFile.read(ClosureCache(directory: cache).closurePath(forApp: app.executable, arch: app.arch))
        #expect(closure.binding.policy == Self.libraryValidation)
        #expect(closure.images.allSatisfy { $0.identity.signature?.teamID == "TEAMID1234" })
        let dyld3 = try await Dyld3Binary.run(["launch", "--mode", "dyld3", "--library-validation", "--json"] + base, limitSeconds: 60)
        #expect(dyld3.status == 0 && (dyld3.json?["result"] as? Int).map(Int32.init) == result, "\(dyld3.stderr)")
        let other = try await Dyld3Binary.run(["launch", "--mode", "dyld3"] + base, limitSeconds: 60)
        #expect(other.status != 0 && other.stderr.contains("built for another policy: library-validation, this launch asks for default"),
                "\(other.stderr)")
        let compare = try await Dyld3Binary.run(["compare", "--library-validation", "--json"] + base, limitSeconds: 60)
        #expect(compare.status == 0 && compare.json?["identical"] as? Bool == true, "\(compare.stderr)")

        let util = app.bundle + "/Frameworks/Util.framework/Util"
        try await Self.resign([util], team: "OTHERTEAM99")
        let refusal = "\(util): refused by --library-validation: team ID OTHERTEAM99, not the main executable's (TEAMID1234)"
        let auto = try await Dyld3Binary.run(["launch", "--mode", "auto", "--library-validation"] + base, limitSeconds: 60)
        #expect(auto.status != 0 && auto.stderr.contains("stale") && auto.stderr.contains(refusal), "\(auto.stderr)")
        let reinstall = try await Dyld3Binary.run(["install", "--library-validation"] + base, limitSeconds: 60)
        #expect(reinstall.status != 0 && reinstall.stderr.contains(refusal), "\(reinstall.stderr)")

        var request = LaunchOptions(roots: [app.executable], arch: app.arch, root: app.root, run: false)
        request.signingPolicy = Self.libraryValidation
        try await Self.resign([util], team: "", platform: 1)
        #expect(try SlowPath.launch(request).report.images.contains(util))
        try await Self.resign([util], team: "")
        #expect { _ = try SlowPath.launch(request) } throws: { error in
            guard let error = error as? LoadError, case let .signingPolicy(path, rule, why) = error else { return false }
            return path == util && rule == .libraryValidation && why.hasPrefix("signed ad hoc (no team ID)")
        }
    }

    /// The rule table on its own: the main executable is never held to its own team ID; a
    /// platform main executable accepts only platform libraries; a team-ID library under a
    /// main executable without one is refused; `--require-signatures` names the first
    /// unsigned image, the main executable included.
    @Test func theRulesDecideByTeamIDAndPlatform() throws {
        let signed = { (team: String?, platform: UInt8) -> SignedImage in
            SignedImage(cdHash: CDHash(bytes: [UInt8](repeating: 1, count: 20))!, hashType: .sha256, codeDirectoryOffset: 0,
                        codeDirectorySize: 0, teamID: team, platform: platform)
        }
        let lv = Self.libraryValidation
        #expect(throws: Never.self) { try lv.check([("main", signed("T", 0)), ("a", signed("T", 0)), ("p", signed(nil, 2))]) }
        #expect(throws: Never.self) { try lv.check([("main", nil)]) }
        #expect(throws: Never.self) { try lv.check([("main", signed(nil, 1)), ("p", signed("T", 1))]) }
        let refused = { (images: [(path: String, signature: SignedImage?)]) -> String? in
            do throws(LoadError) {
                try lv.check(images)
                return nil
            } catch {
                guard case let .signingPolicy(path, rule, _) = error, rule == .libraryValidation else { return "?" }
                return path
            }
        }
        #expect(refused([("main", signed(nil, 1)), ("a", signed("T", 0))]) == "a")
        #expect(refused([("main", signed(nil, 0)), ("a", signed("T", 0))]) == "a")
        #expect(refused([("main", nil), ("p", signed(nil, 1)), ("a", nil)]) == "a")
        #expect(refused([("main", signed("T", 0)), ("a", signed("T", 0)), ("b", signed("U", 0))]) == "b")
        #expect(throws: LoadError.signingPolicy(path: "main", rule: .requireSignatures,
                                                why: "the image is unsigned; every image must carry a valid signature")) {
            try Self.requireSignatures.check([("main", nil), ("a", nil)])
        }
        for policy in [SigningPolicy.default, Self.requireSignatures, Self.libraryValidation, SigningPolicy(requireSignatures: true, libraryValidation: true)] {
            #expect(SigningPolicy(name: policy.name) == policy)
        }
        #expect(SigningPolicy(name: "library-validation+require-signatures") == nil)
    }

    /// Removes `LC_CODE_SIGNATURE` from a thin image where ld64.lld puts it, last (the
    /// signature's bytes stay in `__LINKEDIT`, referenced by nothing): llvm-objdump lists the
    /// command before and not after.
    static func removeSignature(_ path: String) async throws {
        #expect(try await Oracle.objdump(["--private-headers", path]).contains("cmd LC_CODE_SIGNATURE"))
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        let u32 = { (at: Int) -> Int in Int(bytes[at]) | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2]) << 16 | Int(bytes[at + 3]) << 24 }
        let put = { (bytes: inout [UInt8], at: Int, value: Int) in for i in 0..<4 { bytes[at + i] = UInt8(truncatingIfNeeded: value >> (8 * i)) } }
        try #require(u32(0) == 0xfeedfacf)
        let count = u32(16), size = u32(20)
        var offset = 32
        for _ in 0..<count - 1 { offset += u32(offset + 4) }
        try #require(u32(offset) == 0x1d && u32(offset + 4) == 16 && offset + 16 == 32 + size, "LC_CODE_SIGNATURE is not the last command")
        put(&bytes, 16, count - 1)
        put(&bytes, 20, size - 16)
        for i in offset..<offset + 16 { bytes[i] = 0 }
        try Data(bytes).write(to: URL(fileURLWithPath: path), options: .atomic)
        #expect(try await !Oracle.objdump(["--private-headers", path]).contains("LC_CODE_SIGNATURE"))
    }

    /// Signs each of `paths` again as `codesign` would with team ID `team` ("" for none) and
    /// CodeDirectory `platform` field (tools/damage-code-signature --resign).
    static func resign(_ paths: [String], team: String, platform: Int = 0) async throws {
        let out = try Scratch.directory("policy-resign")
        defer { Scratch.remove(out) }
        let tool = Paths.repoRoot.appendingPathComponent("tools/damage-code-signature").path
        var arguments = ["60", "python3", tool, out, "--team", team, "--platform", String(platform)]
        for (index, path) in paths.enumerated() { arguments += ["--resign", "image\(index)=\(path)"] }
        let result = try await ProcessRunner.run("/usr/bin/timeout", arguments)
        try #require(result.succeeded, "\(result.error)")
        for (index, path) in paths.enumerated() {
            let signed = try Data(contentsOf: URL(fileURLWithPath: out + "/image\(index).resigned"))
            try signed.write(to: URL(fileURLWithPath: path), options: .atomic)
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: path)
        }
    }
}
