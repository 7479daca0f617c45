@testable import ClosureFormat
import ClosureBuild
import Dyld3
import Foundation
import ClosureCache
import LaunchPlan
import LoaderCore
import MachOReader
import TestSupport
import Testing

/// Closures with a valid checksum whose runs or page index a page-in launch would otherwise
/// meet only in its fault handler, after `main` has started: each must be refused before
/// anything is mapped, with the reason an eager launch gives, and `--mode auto` must fall back
/// to dyld2 and run. The forgeries re-encode a decoded closure, so only the checks under test
/// can refuse them.
@Suite(.serialized, .bounded) struct PageInTamperTests {
    /// A slide of this suite's own (suites run at once).
    static let slide: UInt64 = 0x6a00_0000_0000

    enum Forgery: String, CaseIterable, CustomStringConvertible, Sendable {
        /// One bind run naming a target far past the table, the page index made to match.
        case bindTargetPastTheTable
        /// One rebase run whose target lies past the image, the page index made to match.
        case rebaseTargetPastTheImage
        /// The page index without one of the pages the runs write.
        case pageMissingFromTheIndex
        /// Two pages of the index pointing at each other's runs.
        case pagesPointingAtEachOthersRuns
        var description: String { rawValue }
    }

    /// The app and image the forgeries change: one with binds and at least two indexed pages.
    static func target() throws -> (FixtureApp, LaunchClosure, Int) {
        let app = try FixtureApp.named("init-order")
        let closure = try app.closure()
        let image = try #require(closure.images.indices.first { index in
            let pages = (try? closure.images[index].fixupPageIndex.pages(path: "").pages.count) ?? 0
            return closure.images[index].bindCount > 0 && pages >= 2
        })
        return (app, closure, image)
    }

    /// `closure` with `forgery` applied to image `image`, and the fault the checks must name.
    static func forge(_ forgery: Forgery, _ closure: LaunchClosure, image: Int) throws -> (LaunchClosure, (FixupFault) -> Bool) {
        var closure = closure
        let writable = try #require(closure.images[image].plan.segments.first { $0.isWritable })
        var index = try closure.images[image].fixupPageIndex.pages(path: "").pages
        switch forgery {
        case .bindTargetPastTheTable:
            closure.images[image].bindRuns = (LEB128.unsigned(1) + LEB128.unsigned(writable.vmOffset) + LEB128.unsigned(1)
                + LEB128.unsigned(0) + LEB128.unsigned(999 + UInt64(closure.bindTargets.count)) + LEB128.signed(0))[...]
            closure.images[image].bindCount = 1
            closure.images[image].fixupPageIndex = try FixupPageIndex.derive(rebaseRuns: closure.images[image].rebaseRuns,
                                                                             bindRuns: closure.images[image].bindRuns)
            return (closure, { if case .bindTargetPastTable = $0 { true } else { false } })
        case .rebaseTargetPastTheImage:
            closure.images[image].rebaseRuns = (LEB128.unsigned(1) + LEB128.unsigned(writable.vmOffset) + LEB128.unsigned(1)
                + LEB128.unsigned(0) + LEB128.signed(Int64(closure.images[image].plan.vmSize + 0x1000)))[...]
            closure.images[image].rebaseCount = 1
            closure.images[image].fixupPageIndex = try FixupPageIndex.derive(rebaseRuns: closure.images[image].rebaseRuns,
                                                                             bindRuns: closure.images[image].bindRuns)
            return (closure, { if case .rebaseTargetOutsideImage = $0 { true } else { false } })
        case .pageMissingFromTheIndex:
            index.removeLast()
            closure.images[image].fixupPageIndex = FixupPageIndex(pages: index)
            return (closure, { if case .pageIndexDisagrees = $0 { true } else { false } })
        case .pagesPointingAtEachOthersRuns:
            let (first, second) = (index[0], index[1])
            index[0] = FixupPage(page: first.page, rebases: second.rebases, binds: second.binds)
            index[1] = FixupPage(page: second.page, rebases: first.rebases, binds: first.binds)
            closure.images[image].fixupPageIndex = FixupPageIndex(pages: index)
            return (closure, { if case .pageIndexDisagrees = $0 { true } else { false } })
        }
    }

    /// The target's closure with `forgery`, written into a new cache `name` (the caller
    /// removes it): the app, the forged closure, its forged image, the fault expected, the
    /// cache and the closure's path.
    static func installForged(_ forgery: Forgery, _ name: String) throws -> (
        app: FixtureApp, closure: LaunchClosure, image: Int, isExpected: (FixupFault) -> Bool, cache: String, path: String
    ) {
        let (app, genuine, image) = try target()
        let (closure, isExpected) = try forge(forgery, genuine, image: image)
        let cache = try Scratch.directory(name)
        let path = ClosureCache(directory: cache).closurePath(forApp: app.executable, arch: app.arch)
        try ClosureFile.write(closure, to: path)
        return (app, closure, image, isExpected, cache, path)
    }

    /// In process: the page-in launch throws the fault, naming the closure and the image,
    /// before anything is mapped (no mapping of the region is left, nothing ran).
    @Test(arguments: Forgery.allCases)
    func pageInRefusesBeforeMapping(_ forgery: Forgery) throws {
        let (app, closure, image, isExpected, cache, path) = try Self.installForged(forgery, "pagein-tamper")
        defer { Scratch.remove(cache) }
        let request = LaunchOptions(roots: [app.executable], arch: app.arch, root: app.root, slide: Self.slide, fixups: .pageIn)
        #expect { try FastPath.launch(closurePath: path, request: request) } throws: { error in
            guard let error = error as? ClosureError, case let .fixups(closurePath, imagePath, _, fault) = error else { return false }
            return closurePath == path && imagePath == closure.images[image].path && isExpected(fault)
        }
        #expect(try !ProcessMaps.anyMapping(in: Self.slide..<(Self.slide + (1 << 40))), "\(forgery): a refused launch left a mapping")
        // An eager launch refuses the runs too, with the same fault (the page index alone is
        // page-in's: an eager launch does not read it).
        if forgery == .bindTargetPastTheTable || forgery == .rebaseTargetPastTheImage {
            var eager = request
            eager.fixups = .eager
            #expect { try FastPath.launch(closurePath: path, request: eager) } throws: { error in
                guard let error = error as? ClosureError, case let .fixups(_, _, _, fault) = error else { return false }
                return isExpected(fault)
            }
        }
    }

    /// Through the command: `launch --mode auto --fixups page-in` falls back to dyld2 with the
    /// reason and runs to the app's result; `compare --fixups page-in` refuses without a crash.
    @Test(arguments: Forgery.allCases)
    func autoFallsBackAndCompareRefuses(_ forgery: Forgery) async throws {
        let (app, _, _, _, cache, path) = try Self.installForged(forgery, "pagein-tamper-cli")
        defer { Scratch.remove(cache) }
        let auto = try await Dyld3Binary.run(["launch", app.bundle, "--root", app.root, "--cache", cache, "--mode", "auto",
                                              "--fixups", "page-in", "--json"], limitSeconds: 30)
        #expect(auto.json?["mode"] as? String == "dyld2")
        try ClosureRefusal.expectFallback(auto, of: app) { reason in reason.hasPrefix("invalid:") && reason.contains(path) }
        let compare = try await Dyld3Binary.run(["compare", app.bundle, "--root", app.root, "--cache", cache, "--fixups", "page-in"],
                                                limitSeconds: 30)
        #expect(compare.status == 1, "\(forgery): compare exited \(compare.status): \(compare.stderr)")
        #expect(compare.stderr.contains(path) && compare.stderr.contains("invalid"), "\(forgery): \(compare.stderr)")
    }

    /// A large closure (the generated 100-framework app: the launch's helper runs) checks the
    /// runs on the helper as soon as it is decoded, while the images are opened: a bind past
    /// the table in the last image is refused, naming it, before anything is mapped. (The
    /// launch's address is taken beforehand, so a launch that mapped first would fail to
    /// reserve it and report that instead.)
    @Test func aForgedRunInALargeClosureIsRefusedBeforeMapping() throws {
        let base = Paths.repoRoot.appendingPathComponent("build/demo-gen100").path
        let executable = base + "/gen100.app/gen100"
        try #require(FileManager.default.fileExists(atPath: executable), "run tools/gen-app --preset 100 --seed 1 --out build/demo-gen100")
        var closure = try ClosureBuilder.build(roots: [executable], arch: "x86_64", root: base + "/root")
        #expect(closure.encodedBody().count >= ClosureFile.helperThreshold, "the closure must be large enough to start the helper")
        let image = try #require(closure.images.indices.last { closure.images[$0].bindCount > 0 })
        let writable = try #require(closure.images[image].plan.segments.first { $0.isWritable })
        closure.images[image].bindRuns = (LEB128.unsigned(1) + LEB128.unsigned(writable.vmOffset) + LEB128.unsigned(1)
            + LEB128.unsigned(0) + LEB128.unsigned(UInt64(closure.bindTargets.count)) + LEB128.signed(0))[...]
        closure.images[image].bindCount = 1
        closure.images[image].fixupPageIndex = try FixupPageIndex.derive(rebaseRuns: closure.images[image].rebaseRuns,
                                                                         bindRuns: closure.images[image].bindRuns)
        let cache = try Scratch.directory("pagein-tamper-large")
        defer { Scratch.remove(cache) }
        let path = ClosureCache(directory: cache).closurePath(forApp: executable, arch: "x86_64")
        try ClosureFile.write(closure, to: path)
        let request = LaunchOptions(roots: [executable], arch: "x86_64", root: base + "/root", slide: Self.slide, run: false, fixups: .pageIn)
        let block = try #require(AddressBlock(at: closure.images[0].plan.preferredBase &+ Self.slide))
        defer { block.release() }
        #expect { try FastPath.launch(closurePath: path, request: request) } throws: { error in
            guard let error = error as? ClosureError, case let .fixups(closurePath, imagePath, _, .bindTargetPastTable) = error else { return false }
            return closurePath == path && imagePath == closure.images[image].path
        }
        // The same launch with intact runs gets as far as the mapping, and fails there.
        try ClosureFile.write(try ClosureBuilder.build(roots: [executable], arch: "x86_64", root: base + "/root"), to: path)
        #expect { try FastPath.launch(closurePath: path, request: request) } throws: { error in
            guard let error = error as? ClosureError, case let .mapping(closurePath, _, what) = error else { return false }
            return closurePath == path && what.contains("cannot reserve")
        }
    }
}
