@testable import Dyld2
import Foundation
import LoaderCore
import MachOReader
import TestSupport
import Testing
import LaunchPlan
import LaunchMemory

/// dyld2's raw chain walk (``UnsafeChainedRebaseWalk``, taken when nothing records the
/// fixups) against the checked cursor (taken when `compare` records them), on every
/// chained image of fixture apps, intact and with its chains damaged: pointers turned from
/// rebase to bind, chains sent off their page, import ordinals past the table, page starts
/// made multi or moved out of the page. Both launches fail with the same error or leave
/// the same bytes, and the raw walk both takes and refuses images many times over.
@Suite(.serialized, .bounded) struct ChainWalkTests {
    /// A slide of this suite's own, above where launches without a slide land (suites run at
    /// once: it once shared TrustTests' slide, and a launch found the region taken).
    static let slide: UInt64 = 0x6200_0000_0000

    @Test(arguments: ["x86_64-chained", "arm64-chained"])
    func rawChainWalkAgreesWithTheCheckedCursor(variant: String) throws {
        let app = try FixtureApp.named("init-order", variant).scratchCopy()
        defer { Scratch.remove(app.directory.path) }
        let intact = Self.outcomes(app)
        #expect(intact.raw == intact.checked && intact.raw.hasPrefix("digest"), "\(intact)")

        var cases = 0, taken = 0, refused = 0, failed = 0
        for path in try Self.chainedImagePaths(app) {
            let original = try Data(contentsOf: URL(fileURLWithPath: path))
            for (offset, mask) in try Self.damage(path, arch: app.arch) {
                var damaged = original
                damaged[offset] ^= mask
                try damaged.write(to: URL(fileURLWithPath: path))
                let accepted = try Self.rawWalkAccepts(path, arch: app.arch)
                let outcome = Self.outcomes(app)
                cases += 1
                if accepted == true { taken += 1 } else if accepted == false { refused += 1 }
                if !outcome.raw.hasPrefix("digest") { failed += 1 }
                #expect(outcome.raw == outcome.checked, "\(path) byte \(offset) ^ 0x\(String(mask, radix: 16))")
            }
            try original.write(to: URL(fileURLWithPath: path))
        }
        // The damage reached the raw walk's both answers, and launches that fail.
        #expect(cases > 100 && taken > 20 && refused > 20 && failed > 20, "\(cases) cases, \(taken) taken, \(refused) refused, \(failed) failed")
        print("chain walk [\(variant)]: \(cases) damaged images, raw walk took \(taken) and refused \(refused), \(failed) launches failed alike")
    }

    /// The app launched by dyld2 at one slide, with and without recording its fixups: the
    /// error each launch gives, or the digest of every writable page.
    static func outcomes(_ app: FixtureApp) -> (raw: String, checked: String) {
        func launch(recording: Bool) -> String {
            do {
                let launch = try SlowPath.launch(LaunchOptions(
                    roots: [app.executable], arch: app.arch, root: app.root, slide: slide, run: false, recordFixups: recording))
                defer { launch.memory.release() }
                return "digest \(launch.report.digest.map { String($0, radix: 16) } ?? "none")"
            } catch {
                return "\(error)"
            }
        }
        return (launch(recording: false), launch(recording: true))
    }

    /// Every image of the app (bundle and root) with chained fixups.
    static func chainedImagePaths(_ app: FixtureApp) throws -> [String] {
        var paths: [String] = []
        for directory in [app.bundle, app.root] {
            guard let walker = FileManager.default.enumerator(atPath: directory) else { continue }
            for case let relative as String in walker {
                // Symlinks name files already listed: each file once, by its own path.
                guard let file = try? ImageFile.load(path: directory + "/" + relative, arch: app.arch),
                      try file.image.parseChainedFixupChains() != nil, !paths.contains(file.path) else { continue }
                paths.append(file.path)
            }
        }
        #expect(paths.count >= 3, "\(paths)")
        return paths
    }

    /// Whether the raw walk takes the image at `path` whole (nil: its chains do not parse).
    static func rawWalkAccepts(_ path: String, arch: String) throws -> Bool? {
        guard let file = try? ImageFile.load(path: path, arch: arch), let chains = try? file.image.parseChainedFixupChains() else { return nil }
        let plan = try ImagePlan(image: file.image, path: path, sliceOffset: file.sliceOffset)
        let memory = try LaunchMemory(plans: [plan], firstSlide: slide)
        defer { memory.release() }
        var binds: [ChainedBindSite] = []
        return UnsafeChainedRebaseWalk.walk(chains, image: file.image, preferredBase: plan.preferredBase,
                                            writer: memory.writer(image: 0), binds: &binds) != nil
    }

    /// Bytes to flip in the image at `path` (file offset, mask): in up to 12 chained
    /// pointers, the bind bit, a `next` bit and an import-ordinal bit; in every page start,
    /// the multi flag, a high offset bit and the lowest bit.
    static func damage(_ path: String, arch: String) throws -> [(offset: Int, mask: UInt8)] {
        let file = try ImageFile.load(path: path, arch: arch)
        guard let chains = try file.image.parseChainedFixupChains() else { return [] }
        var flips: [(Int, UInt8)] = []
        var cursor = ChainedPointerCursor(chains, in: file.image)
        var pointers = 0
        while pointers < 12, let site = try cursor.next() {
            pointers += 1
            flips += [(site.fileOffset + 7, 0x80), (site.fileOffset + 6, 0x08), (site.fileOffset + 7, 0x40), (site.fileOffset + 2, 0x80)]
        }
        for starts in chains.segments {
            for page in 0..<starts.pageCount where starts.pageStarts[page] != ChainedStartsInSegment.startNone {
                let entry = starts.absoluteOffset(ofStartEntry: page)
                flips += [(entry + 1, 0x80), (entry + 1, 0x10), (entry, 0x01)]
            }
        }
        return flips
    }
}
