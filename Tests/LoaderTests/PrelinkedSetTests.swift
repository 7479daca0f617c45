import ClosureBuild
import ClosureFormat
import Dyld3
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import ClosureCache
import LaunchComparison
import LaunchPlan
import LoaderCore
import MachOReader
import ProcessRunner
import TestSupport
import Testing
import LoaderSystem
import LaunchMemory

/// Prelinked sets (docs/prelinked.md): the launch of an app's set leaves the memory dyld2
/// leaves at the same slide and returns the fixture's manifest result; a set that was
/// damaged, truncated, built for another request or whose source images changed is refused
/// with its reason, and `auto` then takes the closure.
@Suite(.serialized, .bounded) struct PrelinkedSetTests {
    static let launchable = SlowPathTests.apps.filter { $0.launches && ["x86_64-chained", "arm64-opcodes"].contains($0.variant) }

    /// A fresh cache directory (mode 0755) holding the closure and the set of `app`; the paths.
    static func install(_ app: FixtureApp) throws -> (cache: String, closure: String, set: String) {
        let cache = try Scratch.directory("prelinked")
        let closurePath = try app.install(into: cache)
        let closure = try ClosureFile.read(closurePath)
        let setPath = ClosureCache.prelinkedSetPath(forClosure: closurePath)
        let (set, data) = try PrelinkBuilder.build(closure, closurePath: closurePath)
        try PrelinkedSetFile.write(set, data: data, to: setPath)
        // Date the set an hour ahead: its images' identities are then not racy, and the
        // launch checks them by status alone, as it does once install is 2 s old.
        var times = [timespec(tv_sec: time(nil), tv_nsec: 0), timespec(tv_sec: time(nil) + 3600, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, setPath, &times, 0) == 0)
        return (cache, closurePath, setPath)
    }

    /// A scratch copy of the x86_64-chained fixture `name` (its images may be changed).
    static func scratch(_ name: String) throws -> FixtureApp {
        try #require(SlowPathTests.apps.first { $0.name == name && $0.variant == "x86_64-chained" }).scratchCopy()
    }

    static func request(_ app: FixtureApp, run: Bool = true) -> LaunchOptions {
        LaunchOptions(roots: [app.executable], arch: app.arch, root: app.root, run: run)
    }

    /// Both ways a set launches: its copy slid for this boot mapped as it lies (written by
    /// the first launch), and the set slid by the launch itself (`--slide-per-launch`).
    @Test(arguments: launchable)
    func prelinkedMemoryIsDyld2s(_ app: FixtureApp) throws {
        let (cache, closurePath, setPath) = try Self.install(app)
        defer { try? FileManager.default.removeItem(atPath: cache) }
        try #require(SlidPrelinkedSetFile.bootID != nil, "this machine's boot id cannot be read")
        for perLaunch in [false, true] {
            var options = Self.request(app)
            options.slidePerLaunch = perLaunch
            let comparison = try LaunchComparison.run(options: options, closure: try ClosureFile.read(closurePath), closurePath: setPath,
                                                      prelinkedSet: setPath)
            #expect(comparison.differences.isEmpty, "\(app) per launch \(perLaunch): \(comparison.differences.prefix(3))")
            #expect(comparison.bytesCompared > 0 && comparison.fixupsCompared > 0)
            #expect(comparison.slidForBoot == !perLaunch, "\(app): \(comparison.slideAtLaunch?.description ?? "")")
            if app.arch == CodeRunner.hostArchitecture, case let .result(expected, _) = app.expectation {
                #expect(comparison.dyld3Result == expected)
            }
        }
    }

    /// The copy slid for this boot: the first launch writes it and maps it, the next maps it
    /// at the same address; a second launch while the first holds that range slides the set
    /// itself; a copy for another boot, one others can write, one with a damaged header,
    /// forged protection runs or (with `--hash-images`) damaged data, is written again, never
    /// used; a forced slide elsewhere slides the set. Each launch returns the fixture's result.
    @Test func aSetSlidForThisBootIsMappedAsItLies() throws {
        let app = try #require(Self.launchable.first { $0.name == "init-order" && $0.variant == "x86_64-chained" })
        guard case let .result(expected, _) = app.expectation else { Issue.record("init-order does not launch"); return }
        try #require(SlidPrelinkedSetFile.bootID != nil, "this machine's boot id cannot be read")
        let (cache, _, setPath) = try Self.install(app)
        defer { try? FileManager.default.removeItem(atPath: cache) }
        let copyPath = ClosureCache.slidSetPath(forSet: setPath)
        func launch(_ request: LaunchOptions? = nil, hash: Bool = false) throws -> Launch {
            try PrelinkedLaunch.launch(setPath: setPath, request: request ?? Self.request(app), configuration: LaunchConfiguration(alwaysHashContent: hash))
        }
        let first = try launch()
        #expect(first.report.slidForBoot && first.report.slidSetWritten && first.report.result == expected, "\(first.report.slideAtLaunch?.description ?? "")")
        let header = try SlidPrelinkedSetHeader(parsing: Array(Data(contentsOf: URL(fileURLWithPath: copyPath))), fileSize: FileStatus.of(copyPath)?.size ?? 0,
                                                rangeSize: first.memory.regionSize, pageSize: LaunchMemory.pageSize, path: copyPath)
        // Every image's __TEXT runs read-execute, its __DATA read-write; nothing is writable and executable.
        for image in first.memory.images {
            for segment in image.plan.segments where segment.name == "__TEXT" || segment.name == "__DATA" {
                let start = image.base - first.memory.regionBase + segment.vmOffset
                let run = header.protections.first { $0.range.contains(start) }
                #expect(run.map { $0.protection.contains(.read) && $0.protection.contains(.write) == (segment.name == "__DATA")
                    && $0.protection.contains(.execute) == (segment.name == "__TEXT") } == true,
                        "\(image.plan.path) \(segment.name): \(String(describing: run))")
            }
        }
        #expect(!header.protections.contains { $0.protection.isSuperset(of: [.write, .execute]) })
        #expect(header.base == first.memory.regionBase && header.bootID == SlidPrelinkedSetFile.bootID)
        let beside = try launch()
        #expect(!beside.report.slidForBoot && beside.report.result == expected)
        #expect(beside.report.slideAtLaunch?.description.contains("is taken in this process") == true, "\(beside.report.slideAtLaunch?.description ?? "")")
        beside.memory.release()
        first.memory.release()
        let again = try launch()
        #expect(again.report.slidForBoot && !again.report.slidSetWritten && again.memory.regionBase == header.base && again.report.result == expected)
        #expect(again.report.rebases == 0 && beside.report.rebases > 0, "the copy stores nothing; the set slid at launch stores its slide")
        again.memory.release()

        let damages: [(String, Bool, () throws -> Void)] = [
            ("another boot", false, {
                let other = SlidPrelinkedSetHeader(setChecksum: header.setChecksum, setDataHash: header.setDataHash, base: header.base,
                                                   bootID: header.bootID.map { $0 ^ 0xff }, dataHash: header.dataHash, protections: header.protections)
                try Self.rewrite(copyPath) { $0.replaceSubrange(0..<other.bytes.count, with: other.bytes) }
            }),
            ("a header byte", false, { try Self.rewrite(copyPath) { $0[44] ^= 1 } }),
            // Forged protection runs, their checksum computed again: one run fewer (mapped
            // and protected, then found not to be the plans' runs before anything runs), and
            // one writable and executable (refused as it is read).
            ("a protection run fewer", false, {
                let forged = SlidPrelinkedSetHeader(setChecksum: header.setChecksum, setDataHash: header.setDataHash, base: header.base,
                                                    bootID: header.bootID, dataHash: header.dataHash, protections: Array(header.protections.dropLast()))
                try #require(forged.dataOffset == header.dataOffset)
                try Self.rewrite(copyPath) { $0.replaceSubrange(0..<forged.bytes.count, with: forged.bytes) }
            }),
            ("a writable and executable run", false, {
                let first = header.protections[0]
                let forged = SlidPrelinkedSetHeader(setChecksum: header.setChecksum, setDataHash: header.setDataHash, base: header.base,
                                                    bootID: header.bootID, dataHash: header.dataHash,
                                                    protections: [.init(range: first.range, protection: [.read, .write, .execute])] + header.protections.dropFirst())
                try Self.rewrite(copyPath) { $0.replaceSubrange(0..<forged.bytes.count, with: forged.bytes) }
            }),
            ("writable by others", false, { chmod(copyPath, 0o666) }),
        ] + [0, 0xffff_8000_0000_0000, 0x8000_0000_0000].map { (base: UInt64) in
            // An owner-forged base no launch slides a copy to: 0, the kernel's half, past user
            // space (its checksum computed again): written again, not refused at every launch.
            ("base 0x\(String(base, radix: 16))", false, {
                let forged = SlidPrelinkedSetHeader(setChecksum: header.setChecksum, setDataHash: header.setDataHash, base: base,
                                                    bootID: header.bootID, dataHash: header.dataHash, protections: header.protections)
                try Self.rewrite(copyPath) { $0.replaceSubrange(0..<forged.bytes.count, with: forged.bytes) }
            })
        } + [
            ("a data byte, hashed", true, { try Self.rewrite(copyPath) { $0[$0.count - 1] ^= 1 } }),
        ]
        for (name, hash, damage) in damages {
            try damage()
            let rewritten = try launch(hash: hash)
            #expect(rewritten.report.slidForBoot && rewritten.report.slidSetWritten && rewritten.report.result == expected,
                    "\(name): \(rewritten.report.slideAtLaunch?.description ?? "")")
            rewritten.memory.release()
            #expect(FileStatus.of(copyPath).map { $0.mode & 0o777 } == 0o444, "\(name)")
        }
        var forced = Self.request(app)
        forced.slide = 0x7100_0000_0000
        let elsewhere = try launch(forced)
        #expect(!elsewhere.report.slidForBoot && elsewhere.report.result == expected && elsewhere.report.slide == 0x7100_0000_0000)
        #expect(elsewhere.report.slideAtLaunch?.description.contains("the slide is forced") == true)
        elsewhere.memory.release()
    }

    /// `--fixups page-in` over the set: the slide stored on first touch, page by page from
    /// the set's per-page index; the comparison touches every page, and memory is dyld2's.
    /// Where userfaultfd is unavailable, the eager fallback and its reason.
    @Test(arguments: launchable.filter { $0.variant == "x86_64-chained" })
    func pagedInSetMemoryIsDyld2s(_ app: FixtureApp) throws {
        let (cache, closurePath, setPath) = try Self.install(app)
        defer { try? FileManager.default.removeItem(atPath: cache) }
        var options = Self.request(app)
        options.fixups = .pageIn
        options.slidePerLaunch = true
        let comparison = try LaunchComparison.run(options: options, closure: try ClosureFile.read(closurePath), closurePath: setPath,
                                                  prelinkedSet: setPath)
        #expect(comparison.differences.isEmpty, "\(app): \(comparison.differences.prefix(3))")
        PageInTests.expectPageInOrFallback(comparison.fixupsMode, comparison.pageInFallback?.description, "\(app)")
        if PageInTests.unavailable == nil {
            #expect(comparison.pagesRegistered > 0 && comparison.pagesFilled == comparison.pagesRegistered)
        }
        if case let .result(expected, _) = app.expectation { #expect(comparison.dyld3Result == expected) }
    }

    @Test func prelinkedLaunchRunsInitializersInTheManifestOrder() throws {
        let app = try #require(Self.launchable.first { $0.name == "init-order" && $0.variant == "x86_64-chained" })
        let (cache, _, setPath) = try Self.install(app)
        defer { try? FileManager.default.removeItem(atPath: cache) }
        let launch = try PrelinkedLaunch.launch(setPath: setPath, request: Self.request(app))
        defer { launch.memory.release() }
        guard case let .result(expected, initOrder) = app.expectation else { return }
        #expect(launch.report.mode == "prelinked")
        #expect(launch.report.result == expected)
        #expect(launch.report.imagesHashed == 0)
        if let initOrder { #expect(launch.report.initializers.map(app.imageName) == initOrder) }
    }

    /// What launching `app`'s set gives after `damage` (given the set's path): the refusal.
    static func refusal(_ app: FixtureApp, hashImages: Bool = false, request: LaunchOptions? = nil,
                        _ damage: (_ set: String, _ app: FixtureApp) throws -> Void) throws -> ClosureError? {
        let (cache, _, setPath) = try install(app)
        defer { try? FileManager.default.removeItem(atPath: cache) }
        try damage(setPath, app)
        do {
            let launch = try PrelinkedLaunch.launch(setPath: setPath, request: request ?? Self.request(app, run: false),
                                                    configuration: LaunchConfiguration(alwaysHashContent: hashImages))
            launch.memory.release()
            return nil
        } catch let error as ClosureError {
            return error
        }
    }

    static func rewrite(_ path: String, _ change: (inout [UInt8]) -> Void) throws {
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        change(&bytes)
        try FileManager.default.removeItem(atPath: path)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o444)
    }

    @Test func damagedTruncatedAndStaleSetsAreRefused() throws {
        let app = try Self.scratch("reexport")
        defer { try? FileManager.default.removeItem(atPath: app.directory.path) }
        // A byte of metadata: the checksum.
        let metadata = try Self.refusal(app) { set, _ in try Self.rewrite(set) { $0[100] ^= 0x40 } }
        #expect(metadata?.kind == "corrupt" && "\(metadata!)".contains("checksum mismatch"), "\(String(describing: metadata))")
        // A byte of data: found by the data hash (--hash-images), as verify finds it.
        let dataOffset = { (set: String) throws -> Int in
            let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: set)))
            return Int(bytes[32..<40].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
        }
        let data = try Self.refusal(app, hashImages: true) { set, _ in
            let offset = try dataOffset(set)
            try Self.rewrite(set) { $0[offset + 64] ^= 1 }
        }
        #expect(data?.kind == "corrupt" && "\(data!)".contains("data's hash"), "\(String(describing: data))")
        // Truncated: the data no longer ends where the header says.
        let truncated = try Self.refusal(app) { set, _ in try Self.rewrite(set) { $0.removeLast(4096) } }
        #expect(truncated?.kind == "corrupt" && "\(truncated!)".contains("truncated or damaged"), "\(String(describing: truncated))")
        let short = try Self.refusal(app) { set, _ in try Self.rewrite(set) { $0.removeLast($0.count - 30) } }
        #expect(short?.kind == "corrupt", "\(String(describing: short))")
        // Another file's magic.
        let magic = try Self.refusal(app) { set, _ in try Self.rewrite(set) { $0[0] = 0x58 } }
        #expect("\(magic!)".contains("bad magic"))
        // A source image touched (same bytes, new times): stale by its status alone.
        let touched = try Self.refusal(app) { _, app in
            let dylib = app.bundle + "/Frameworks/libInner.dylib"
            var times = [timespec(tv_sec: time(nil) - 100, tv_nsec: 0), timespec(tv_sec: time(nil) - 100, tv_nsec: 0)]
            #expect(utimensat(AT_FDCWD, dylib, &times, 0) == 0)
        }
        #expect(touched?.kind == "stale" && "\(touched!)".contains("libInner.dylib changed since the set was built"), "\(String(describing: touched))")
        let removed = try Self.refusal(app) { _, app in try FileManager.default.removeItem(atPath: app.bundle + "/Frameworks/libInner.dylib") }
        #expect(removed?.kind == "stale" && "\(removed!)".contains("was removed"), "\(String(describing: removed))")
        try FileManager.default.copyItem(atPath: try #require(SlowPathTests.apps.first { $0.name == "reexport" && $0.variant == "x86_64-chained" }).bundle
                                            + "/Frameworks/libInner.dylib",
                                         toPath: app.bundle + "/Frameworks/libInner.dylib")
        // Writable by others: refused as a closure would be.
        let writable = try Self.refusal(app) { set, _ in chmod(set, 0o666) }
        #expect(writable?.kind == "untrusted", "\(String(describing: writable))")
        // Bound to its request: another root is another request.
        var other = Self.request(app, run: false)
        other.root = app.root + "/usr"
        let mismatch = try Self.refusal(app, request: other) { _, _ in }
        #expect(mismatch?.kind.hasPrefix("wrong-") == true, "\(String(describing: mismatch))")
        // Undamaged, the same app launches from its set.
        #expect(try Self.refusal(app) { _, _ in } == nil)
    }

    /// Forged sets whose checksum was computed again (what the checksum cannot catch): seeded
    /// byte changes over the metadata, slid at launch eagerly and paged in, are each refused
    /// with a reason naming the set or launched (nothing run), never a crash.
    @Test(arguments: [(FixupsMode.eager, 600), (FixupsMode.pageIn, 300)])
    func forgedMetadataIsRefusedOrHarmless(_ mode: FixupsMode, rounds: Int) throws {
        let app = try #require(Self.launchable.first { $0.name == "reexport" && $0.variant == "x86_64-chained" })
        let (cache, _, setPath) = try Self.install(app)
        defer { try? FileManager.default.removeItem(atPath: cache) }
        let original = Array(try Data(contentsOf: URL(fileURLWithPath: setPath)))
        let metadataSize = Int(PrelinkedSetHeader.declaredMetadataSize(Array(original[0..<64])))
        var generator = SplitMix64(seed: mode == .eager ? 0x5eed : 0xfeed)
        var request = Self.request(app, run: false)
        request.fixups = mode
        request.slidePerLaunch = true
        var refused = 0, launched = 0
        for round in 0..<rounds {
            var bytes = original
            let at = 64 + Int.random(in: 0..<metadataSize, using: &generator)
            bytes[at] ^= UInt8.random(in: 1...255, using: &generator)
            let checksum = UnsafeHash.xxh3(bytes[16..<(64 + metadataSize)])
            for index in 0..<8 { bytes[8 + index] = UInt8(truncatingIfNeeded: checksum >> (8 * UInt64(index))) }
            try Self.rewrite(setPath) { $0 = bytes }
            do {
                let launch = try PrelinkedLaunch.launch(setPath: setPath, request: request)
                // Every byte the set's pages hold, as compare reads them (page-in fills them).
                _ = launch.memory.writableSnapshot()
                launch.memory.release()
                launched += 1
            } catch let error as ClosureError {
                #expect("\(error)".hasPrefix(setPath), "round \(round): \(error)")
                refused += 1
            } catch let error as LoadError {
                #expect(!"\(error)".isEmpty)
                refused += 1
            }
        }
        #expect(refused + launched == rounds && refused > 0)
    }

    /// 200 copies slid for this boot with seeded byte changes in their protection runs, the
    /// checksum computed again: each is refused as it is read, or mapped, protected and then
    /// found not to be the plans' runs before anything runs; either way it is written again
    /// and the launch returns the fixture's result.
    @Test func forgedProtectionRunsAreNeverKept() throws {
        let app = try #require(Self.launchable.first { $0.name == "reexport" && $0.variant == "x86_64-chained" })
        guard case let .result(expected, _) = app.expectation else { Issue.record("reexport does not launch"); return }
        let (cache, _, setPath) = try Self.install(app)
        defer { try? FileManager.default.removeItem(atPath: cache) }
        let copyPath = ClosureCache.slidSetPath(forSet: setPath)
        let first = try PrelinkedLaunch.launch(setPath: setPath, request: Self.request(app))
        first.memory.release()
        let original = Array(try Data(contentsOf: URL(fileURLWithPath: copyPath)))
        let runs = Int(original[80]) | Int(original[81]) << 8
        try #require(runs > 0 && original.count > SlidPrelinkedSetHeader.size + runs * SlidPrelinkedSetHeader.runSize)
        var generator = SplitMix64(seed: 0x5_1d)
        for round in 0..<200 {
            var bytes = original
            for _ in 0...Int.random(in: 0..<3, using: &generator) {
                bytes[SlidPrelinkedSetHeader.size + Int.random(in: 0..<(runs * SlidPrelinkedSetHeader.runSize), using: &generator)]
                    ^= UInt8.random(in: 1...255, using: &generator)
            }
            let end = SlidPrelinkedSetHeader.size + runs * SlidPrelinkedSetHeader.runSize
            let checksum = UnsafeHash.xxh3(bytes[16..<end])
            for index in 0..<8 { bytes[8 + index] = UInt8(truncatingIfNeeded: checksum >> (8 * UInt64(index))) }
            try Self.rewrite(copyPath) { $0 = bytes }
            let launch = try PrelinkedLaunch.launch(setPath: setPath, request: Self.request(app))
            #expect(launch.report.slidForBoot && launch.report.slidSetWritten && launch.report.result == expected,
                    "round \(round): \(launch.report.slideAtLaunch?.description ?? "")")
            launch.memory.release()
        }
    }

    /// `verify` checks sets: a valid one counts as valid, a damaged one as corrupt, and one
    /// whose image changed as stale; `auto` launches a fresh set first, and after a source
    /// changed says why it did not use the set and takes the closure.
    @Test func verifyAndAutoModeTakeSetsIntoAccount() async throws {
        let app = try Self.scratch("reexport")
        defer { try? FileManager.default.removeItem(atPath: app.directory.path) }
        guard case let .result(expected, _) = app.expectation else { Issue.record("reexport does not launch"); return }
        let (cache, closurePath, setPath) = try Self.install(app)
        defer { try? FileManager.default.removeItem(atPath: cache) }
        // The command line: install --prelink writes the set beside the closure and says so;
        // compare --prelinked finds dyld2's memory in it.
        let installed = try await Dyld3Binary.run(["install", app.bundle, "--root", app.root, "--cache", cache, "--prelink", "--json"],
                                                  limitSeconds: 60)
        let written = try #require((installed.json?["closures"] as? [[String: Any]])?.first, "\(installed.stdout)\(installed.stderr)")
        #expect(written["prelinked_set"] as? String == setPath && (written["prelinked_set_bytes"] as? Int ?? 0) > 0)
        var dated = [timespec(tv_sec: time(nil), tv_nsec: 0), timespec(tv_sec: time(nil) + 3600, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, setPath, &dated, 0) == 0)
        let compared = try await Dyld3Binary.run(["compare", app.bundle, "--root", app.root, "--cache", cache, "--prelinked"], limitSeconds: 60)
        #expect(compared.status == 0 && compared.stdout.contains(": identical: ") && compared.stdout.contains("main returned \(expected) both ways"),
                "\(compared.stdout)\(compared.stderr)")
        let valid = try await Dyld3Binary.run(["verify", "--cache", cache, "--json"], limitSeconds: 60)
        #expect(valid.status == 0, "\(valid.stdout)\(valid.stderr)")
        #expect(((valid.json?["counts"] as? [String: Any])?["valid"] as? Int) == 3)
        let fresh = try await Dyld3Binary.run(["launch", app.bundle, "--root", app.root, "--cache", cache, "--json"], limitSeconds: 60)
        #expect(fresh.json?["mode"] as? String == "prelinked", "\(fresh.stdout)\(fresh.stderr)")
        #expect((fresh.json?["result"] as? NSNumber)?.int32Value == expected)

        var times = [timespec(tv_sec: time(nil) - 100, tv_nsec: 0), timespec(tv_sec: time(nil) - 100, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, app.bundle + "/Frameworks/libInner.dylib", &times, 0) == 0)
        let stale = try await Dyld3Binary.run(["verify", "--cache", cache], limitSeconds: 60)
        #expect(stale.status == 4 && stale.stdout.contains("\(setPath): stale:"), "\(stale.stdout)")
        #expect(stale.stdout.hasSuffix("verify: 1 closures and 2 prelinked sets (1 slid for a boot), 2 valid, 0 corrupt, 1 stale\n"), "\(stale.stdout)")
        let auto = try await Dyld3Binary.run(["launch", app.bundle, "--root", app.root, "--cache", cache], limitSeconds: 60)
        #expect(auto.status == 0 && auto.stdout == "path: dyld3, closure \(closurePath) (prelinked set not used: stale)\nmain returned \(expected)\n",
                "\(auto.stdout)\(auto.stderr)")
        #expect(auto.stderr.hasPrefix("dyld3: prelinked set not used (\(setPath): stale:"), "\(auto.stderr)")
        let autoJSON = try await Dyld3Binary.run(["launch", app.bundle, "--root", app.root, "--cache", cache, "--json"], limitSeconds: 60)
        #expect(autoJSON.json?["mode"] as? String == "dyld3" && autoJSON.json?["fallback_reason"] is NSNull, "\(autoJSON.stdout)")
        #expect((autoJSON.json?["prelinked_fallback_reason"] as? String)?.hasPrefix("stale: \(setPath): stale:") == true, "\(autoJSON.stdout)")
        let forced = try await Dyld3Binary.run(["launch", app.bundle, "--root", app.root, "--cache", cache, "--mode", "prelinked"], limitSeconds: 60)
        #expect(forced.status != 0 && forced.stderr.contains("--mode prelinked") && forced.stderr.contains("stale"), "\(forced.stderr)")

        try Self.rewrite(setPath) { $0[100] ^= 1 }
        let corrupt = try await Dyld3Binary.run(["verify", "--cache", cache], limitSeconds: 60)
        #expect(corrupt.status == 3 && corrupt.stdout.contains("\(setPath): corrupt: checksum mismatch"), "status \(corrupt.status): \(corrupt.stdout)\(corrupt.stderr)")
    }

    /// Signed sets, for caches that travel: `install --prelink --sign` signs the set as it
    /// signs the closure; `verify --trust` and `launch --trust --mode prelinked` then accept
    /// it (checking its data against the signed SHA-256 at every launch), while `auto` with
    /// `--trust` takes the closure. An unsigned set, one signed by another key and one whose
    /// data changed are refused with their reason.
    @Test func aTrustingLaunchTakesOnlyASetSignedByItsKey() async throws {
        let app = try Self.scratch("reexport")
        defer { try? FileManager.default.removeItem(atPath: app.directory.path) }
        guard case let .result(expected, _) = app.expectation else { Issue.record("reexport does not launch"); return }
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("dyld3-signed-set-\(UUID().uuidString)").path
        let cache = work + "/cache", keys = work + "/keys"
        try FileManager.default.createDirectory(atPath: cache, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        defer { try? FileManager.default.removeItem(atPath: work) }
        let generated = try await Dyld3Binary.run(["key", "generate", "--out", keys], limitSeconds: 60)
        try #require(generated.status == 0, "\(generated.stderr)")
        let (signing, trust) = (keys + "/closure-signing.key", keys + "/closure-signing.pub")
        let installed = try await Dyld3Binary.run(["install", app.bundle, "--root", app.root, "--cache", cache, "--prelink", "--sign", signing],
                                                  limitSeconds: 60)
        try #require(installed.status == 0, "\(installed.stdout)\(installed.stderr)")
        let closurePath = ClosureCache(directory: cache).closurePath(forApp: app.executable, arch: app.arch)
        let setPath = ClosureCache.prelinkedSetPath(forClosure: closurePath)

        let verified = try await Dyld3Binary.run(["verify", "--cache", cache, "--trust", trust], limitSeconds: 60)
        #expect(verified.status == 0 && verified.stdout.hasSuffix("verify: 1 closures and 2 prelinked sets (1 slid for a boot), 3 valid, 0 corrupt, 0 stale\n"),
                "\(verified.stdout)\(verified.stderr)")
        let trusted = try await Dyld3Binary.run(["launch", app.bundle, "--root", app.root, "--cache", cache, "--trust", trust,
                                                 "--mode", "prelinked", "--json"], limitSeconds: 60)
        #expect(trusted.json?["mode"] as? String == "prelinked", "\(trusted.stdout)\(trusted.stderr)")
        #expect((trusted.json?["result"] as? NSNumber)?.int32Value == expected)
        // auto, trusting a key, takes the closure: a trusted set's launch hashes all its data.
        let auto = try await Dyld3Binary.run(["launch", app.bundle, "--root", app.root, "--cache", cache, "--trust", trust, "--json"],
                                             limitSeconds: 60)
        #expect(auto.json?["mode"] as? String == "dyld3", "\(auto.stdout)\(auto.stderr)")
        let untrusting = try await Dyld3Binary.run(["launch", app.bundle, "--root", app.root, "--cache", cache, "--json"], limitSeconds: 60)
        #expect(untrusting.json?["mode"] as? String == "prelinked", "\(untrusting.stdout)\(untrusting.stderr)")

        let signed = try Data(contentsOf: URL(fileURLWithPath: setPath))
        let closure = try ClosureFile.read(closurePath)
        let (set, data) = try PrelinkBuilder.build(closure, closurePath: closurePath)
        let refusals: [(String, () throws -> Void, String)] = [
            ("unsigned", { try PrelinkedSetFile.write(set, data: data, to: setPath) }, "is not signed"),
            ("another key", { try PrelinkedSetFile.write(set, data: data, to: setPath, signedWith: ClosureSigningKey()) }, "does not verify with the trusted key"),
            ("a data byte changed", { try Self.rewrite(setPath) { $0[$0.count - 1] ^= 1 } }, "the data's SHA-256 is not the signed one"),
        ]
        for (name, damage, reason) in refusals {
            try? FileManager.default.removeItem(atPath: setPath)
            try signed.write(to: URL(fileURLWithPath: setPath))
            try damage()
            let forced = try await Dyld3Binary.run(["launch", app.bundle, "--root", app.root, "--cache", cache, "--trust", trust,
                                                    "--mode", "prelinked"], limitSeconds: 60)
            #expect(forced.status != 0 && forced.stderr.contains(reason), "\(name): \(forced.stderr)")
            let verify = try await Dyld3Binary.run(["verify", "--cache", cache, "--trust", trust], limitSeconds: 60)
            #expect(verify.status != 0 && verify.stdout.contains("\(setPath): ") && verify.stdout.contains(reason), "\(name): \(verify.stdout)")
        }
    }

    /// A generated app with Objective-C across frameworks: the set's launch leaves dyld2's
    /// memory and returns the result the generator computed.
    @Test func generatedAppMatchesDyld2() async throws {
        let out = NSTemporaryDirectory() + "gen-app-prelinked-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: out) }
        let manifest = try await GeneratedObjCTests.generate(into: out, seed: 5, classes: 2, categories: 1, selectorReferences: 4)
        let expected = try #require((manifest["expect"] as? [String: Any])?["result"] as? Int)
        let options = LaunchOptions(roots: [out + "/gen12.app/gen12"], arch: "x86_64", root: out + "/root")
        let cache = out + "/cache"
        try FileManager.default.createDirectory(atPath: cache, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        let closure = try ClosureBuilder.build(roots: options.roots, arch: "x86_64", root: out + "/root")
        let closurePath = ClosureCache(directory: cache).closurePath(forApp: options.roots[0], arch: "x86_64")
        try ClosureFile.write(closure, to: closurePath)
        let setPath = ClosureCache.prelinkedSetPath(forClosure: closurePath)
        let (set, data) = try PrelinkBuilder.build(closure, closurePath: closurePath)
        try PrelinkedSetFile.write(set, data: data, to: setPath)
        #expect(set.closure.images.count == closure.images.count && set.closure.images.count > 12 && set.slideCount > 0)
        let comparison = try LaunchComparison.run(options: options, closure: closure, closurePath: setPath, prelinkedSet: setPath)
        #expect(comparison.differences.isEmpty, "\(comparison.differences.prefix(3))")
        #expect(comparison.dyld3Result.map(Int.init) == expected)
        #expect(comparison.dyld2Result.map(Int.init) == expected)
    }
}

