@testable import Dyld3
import Foundation
@testable import ClosureCache
import LoaderCore
import MachOReader
import TestSupport
import Testing
import LaunchPlan
@testable import ClosureFormat

/// Closures that are genuine or carry a valid checksum, but must still not be trusted: a plan
/// granting protections the image does not have, a closure bound to another app or root, an
/// image swapped while launching, a bad run under `--mode auto`. Each is one row of the
/// closure-trust attack table (docs/security.md).
@Suite(.serialized, .bounded) struct TrustTests {
    /// A slide of this suite's own, above where launches without a slide land (suites run at once).
    static let slide: UInt64 = 0x6400_0000_0000

    /// The request a launch of `app` makes.
    static func request(_ app: FixtureApp, root: String? = nil, slide: UInt64? = nil) -> LaunchOptions {
        LaunchOptions(roots: [app.executable], arch: app.arch, root: root ?? app.root, slide: slide)
    }

    enum ProtectionForgery: String, CaseIterable, CustomStringConvertible, Sendable {
        /// `__TEXT` rwx, and an absolute bind written over main's first bytes.
        case textWritableAndExecutable
        /// `__TEXT` writable while fixups are applied (read-only after), and the bind over main.
        case textReadOnlyAfterFixups
        /// `__DATA` executable, and the entry point moved into it.
        case dataExecutableWithEntryInIt
        var description: String { rawValue }
    }

    /// The forged closure for `forgery`, with a valid checksum (re-encoded from a decoded one).
    static func forge(_ forgery: ProtectionForgery, _ app: FixtureApp) throws -> LaunchClosure {
        var closure = try app.closure()
        let main = closure.rootCount - 1
        var plan = closure.images[main].plan
        let text = try #require(plan.segments.firstIndex { $0.name == "__TEXT" })
        let data = try #require(plan.segments.firstIndex { $0.name == "__DATA" })
        let entry = try #require(closure.entryOffset)
        switch forgery {
        case .textWritableAndExecutable: plan.segments[text].protection = [.read, .write, .execute]
        case .textReadOnlyAfterFixups: plan.segments[text].readOnlyAfterFixups = true
        case .dataExecutableWithEntryInIt:
            plan.segments[data].protection.insert(.execute)
            closure.entryOffset = plan.segments[data].vmOffset
        }
        closure.images[main].plan = plan
        if forgery != .dataExecutableWithEntryInIt {
            // `mov eax, 1337; ret` as the value of an absolute bind at main's address.
            let planted = ResolvedFixup(vmOffset: entry, kind: .bind(.absolute(0x00c3_0000_0539_b8), addend: 0))
            var targets = Array(closure.bindTargets)
            var index = Dictionary(uniqueKeysWithValues: targets.enumerated().map { ($1, $0) })
            let runs = FixupRuns.encodeBinds([planted], plan: plan, targets: &targets, targetIndex: &index)
            closure.bindTargets = BindTargetTable(targets)
            closure.images[main].bindRuns = runs.bytes[...]
            closure.images[main].bindCount = runs.count
        }
        if let index = try? FixupPageIndex.derive(rebaseRuns: closure.images[main].rebaseRuns, bindRuns: closure.images[main].bindRuns),
           (try? ClosureFile.decode(ClosureFile.encode({ var c = closure; c.images[main].fixupPageIndex = index; return c }()), path: "forged")) != nil {
            closure.images[main].fixupPageIndex = index
        } else {
            closure.images[main].fixupPageIndex = .absent
        }
        return closure
    }

    @Test(arguments: ProtectionForgery.allCases)
    func theImageDecidesProtections(_ forgery: ProtectionForgery) async throws {
        let app = try FixtureApp.named("basic")
        let closure = try Self.forge(forgery, app)
        let cache = try Scratch.directory("trust-protections")
        defer { Scratch.remove(cache) }
        let path = ClosureCache(directory: cache).closurePath(forApp: app.executable, arch: app.arch)
        try ClosureFile.write(closure, to: path)
        #expect(try ClosureFile.read(path) == closure, "the forgery passes every structural check")
        let region = (closure.images[0].plan.preferredBase + Self.slide)..<(closure.images[0].plan.preferredBase + Self.slide + (1 << 32))
        do {
            let launch = try FastPath.launch(closurePath: path, request: Self.request(app, slide: Self.slide))
            launch.memory.release()
            Issue.record("\(forgery): launched (main returned \(launch.report.result.map(String.init) ?? "nothing"))")
        } catch let error as ClosureError {
            #expect(error.kind == "invalid", "\(forgery): \(error)")
            #expect("\(error)".contains(path), "the reason names the closure file: \(error)")
        }
        #expect(try !ProcessMaps.anyMapping(in: region), "\(forgery) left a mapping behind")
        let verdict = ClosureVerification(checking: path)
        #expect(verdict.status == .invalid, "\(forgery): verify says \(verdict.status): \(verdict.problems)")
    }

    @Test func anotherAppsClosureUnderThisAppsNameIsRefused() async throws {
        let victim = try FixtureApp.named("basic"), other = try FixtureApp.named("init-order")
        let cache = try Scratch.directory("trust-misplaced")
        defer { Scratch.remove(cache) }
        let path = ClosureCache(directory: cache).closurePath(forApp: victim.executable, arch: victim.arch)
        try ClosureFile.write(try other.closure(), to: path)
        #expect {
            _ = try FastPath.launch(closurePath: path, request: Self.request(victim))
        } throws: { error in
            guard case let .mismatch(closurePath, field, expected, found) = error as? ClosureError else { return false }
            return closurePath == path && field == .app && expected.hasSuffix("basic.app/basic") && found.hasSuffix("init-order.app/init-order")
        }
        #expect(ClosureVerification(checking: path).status == .misplaced)
        // Through the CLI, auto falls back to dyld2 and gets the victim's own result.
        let result = try await Dyld3Binary.launchAuto(victim, cache: cache)
        try ClosureRefusal.expectFallback(result, of: victim) { $0.hasPrefix("wrong-app:") }
    }

    @Test func aClosureBuiltForAnotherRootIsRefused() async throws {
        let app = try FixtureApp.named("basic")
        let cache = try Scratch.directory("trust-root")
        let emptyRoot = try Scratch.directory("trust-empty-root")
        defer { Scratch.remove(cache); Scratch.remove(emptyRoot) }
        let path = try app.install(into: cache)
        #expect {
            _ = try FastPath.launch(closurePath: path, request: Self.request(app, root: emptyRoot))
        } throws: { error in
            guard case let .mismatch(_, field, expected, found) = error as? ClosureError else { return false }
            return field == .root && expected == emptyRoot && found == PathResolver.normalize(app.root)
        }
        // auto falls back, and dyld2 finds what the empty root really holds: nothing.
        let result = try await Dyld3Binary.run(["launch", app.bundle, "--root", emptyRoot, "--cache", cache, "--mode", "auto"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("wrong-root") || result.stderr.contains("built for another root"), "\(result.stderr)")
        #expect(result.stderr.contains("library not loaded"), "\(result.stderr)")
    }

    /// A dylib renamed over, again and again, with a same-size variant while the app launches:
    /// every launch either refuses the closure as stale or maps the very file it identified.
    @Test func anImageSwappedWhileLaunchingIsNeverTheOneApplied() async throws {
        let app = try FixtureApp.named("basic").scratchCopy()
        defer { try? FileManager.default.removeItem(at: app.directory) }
        let cache = try Scratch.directory("trust-swap")
        defer { Scratch.remove(cache) }
        let path = try app.install(into: cache)
        let closure = try ClosureFile.read(path)
        let index = try #require(closure.images.firstIndex { $0.path.hasSuffix("/Util") })
        let dylib = closure.images[index].path
        let text = try #require(closure.images[index].plan.segments.first { $0.name == "__TEXT" })
        // The variant differs in one byte of __TEXT past the load commands: same size, same header.
        let original = try Data(contentsOf: URL(fileURLWithPath: dylib))
        let probe = Int(text.fileSize) - 1
        var variant = original
        variant[probe] ^= 0xff
        let variantBytes = variant
        let stop = SwapFlag()
        let swapper = Thread {
            var flip = false
            while !stop.isSet {
                let temporary = dylib + ".swap"
                try? (flip ? variantBytes : original).write(to: URL(fileURLWithPath: temporary))
                _ = rename(temporary, dylib)
                flip.toggle()
            }
        }
        swapper.start()
        var applied = 0, refused = 0, appliedToTheOther = 0
        for _ in 0..<400 {
            do {
                let launch = try FastPath.launch(closurePath: path, request: LaunchOptions(roots: [app.executable], arch: app.arch, root: app.root, run: false))
                defer { launch.memory.release() }
                applied += 1
                let byte = launch.memory.mappedFileBytes(image: index, vmOffset: text.vmOffset + UInt64(probe), count: 1)
                if byte == [variantBytes[probe]] { appliedToTheOther += 1 }
            } catch let error as ClosureError {
                guard case .stale = error else { throw error }
                refused += 1
            }
        }
        stop.set()
        while !swapper.isFinished { usleep(1000) }
        try original.write(to: URL(fileURLWithPath: dylib))
        #expect(appliedToTheOther == 0, "\(appliedToTheOther) of \(applied) launches applied the closure to the variant")
        #expect(applied + refused == 400)
        #expect(refused > 0, "the swapper never raced a launch: the test proves nothing")
    }

    @Test func autoFallsBackOnABadRunAndNamesTheClosure() async throws {
        let app = try FixtureApp.named("init-order")
        var closure = try app.closure()
        let image = try #require(closure.images.indices.first { closure.images[$0].bindCount > 0 })
        let writable = try #require(closure.images[image].plan.segments.first { $0.isWritable })
        // One bind whose target index is past the table.
        closure.images[image].bindRuns = (LEB128.unsigned(1) + LEB128.unsigned(writable.vmOffset) + LEB128.unsigned(1) + LEB128.unsigned(0)
            + LEB128.unsigned(UInt64(closure.bindTargets.count)) + LEB128.signed(0))[...]
        closure.images[image].bindCount = 1
        closure.images[image].fixupPageIndex = .absent
        let cache = try Scratch.directory("trust-badrun")
        defer { Scratch.remove(cache) }
        let path = ClosureCache(directory: cache).closurePath(forApp: app.executable, arch: app.arch)
        try ClosureFile.write(closure, to: path)
        let result = try await Dyld3Binary.launchAuto(app, cache: cache)
        #expect(result.json?["mode"] as? String == "dyld2")
        try ClosureRefusal.expectFallback(result, of: app) { reason in reason.hasPrefix("invalid:") && reason.contains(path) && reason.contains("past the table") }
    }
}

/// Set once by the test thread, read by the swapper.
final class SwapFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
}

extension TrustTests {
    /// A 3 GB (sparse) file at a closure's path is refused from its size, unread: launch falls
    /// back at once and verify calls it corrupt.
    @Test func aHugeFileAtTheClosurePathIsRefusedUnread() async throws {
        let app = try FixtureApp.named("basic")
        let cache = try Scratch.directory("trust-huge")
        defer { Scratch.remove(cache) }
        let path = ClosureCache(directory: cache).closurePath(forApp: app.executable, arch: app.arch)
        #expect(FileManager.default.createFile(atPath: path, contents: Data(ClosureFileHeader.magic), attributes: [.posixPermissions: 0o444]))
        #expect(truncate(path, 3 << 30) == 0)
        #expect {
            _ = try ClosureFile.read(path)
        } throws: { error in
            guard case let .corrupt(_, _, what) = error as? ClosureError else { return false }
            return what.contains("over the \(ClosureFile.maxFileSize)-byte limit")
        }
        let verdict = ClosureVerification(checking: path)
        #expect(verdict.status == .corrupt && verdict.problems.first?.message.contains("limit") == true, "\(verdict.problems)")
        let launch = try await Dyld3Binary.launchAuto(app, cache: cache)
        #expect((launch.json?["fallback_reason"] as? String)?.contains("limit") == true, "\(launch.stdout)")
    }
}
