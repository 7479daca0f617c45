import ClosureBuild
import TestSupport
import Dyld2
import Foundation
import LoaderCore
import MachOReader
import Testing
import LaunchPlan

/// Weak coalescing on every arch and fixup style, arm64 included (whose code does not run):
/// every weak-lookup bind of a symbol a manifest lists under `expect.coalesced` must resolve
/// into the image the manifest names. Those names come from the fixture builder's
/// coalescing model (ELF objects' symbol tables, checked against the built images'
/// MH_WEAK_DEFINES), never from this loader.
@Suite(.bounded) struct CoalescingTests {
    static let apps = ((try? FixtureApp.all()) ?? []).filter { !(coalescedWinners($0) ?? [:]).isEmpty }

    /// The manifest's `expect.coalesced`: symbol → image name.
    static func coalescedWinners(_ app: FixtureApp) -> [String: String]? {
        guard let data = FileManager.default.contents(atPath: app.bundle + "/manifest.json"),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let expect = object["expect"] as? [String: Any] else { return nil }
        return expect["coalesced"] as? [String: String]
    }

    @Test func everyVariantOfTheCoalescingFixtureIsHere() {
        #expect(Self.apps.filter { $0.name == "weak-coalesce-flags" }.count == FixtureApp.variants.count)
    }

    @Test(arguments: apps)
    func weakBindsGoToTheManifestWinner(_ app: FixtureApp) throws {
        let winners = try #require(Self.coalescedWinners(app))
        var fixups: [[ResolvedFixup]] = []
        let analysis = try LaunchAnalysis(roots: [app.executable], arch: app.arch, root: app.root) { (_, imageFixups) throws(LoadError) in
            fixups.append(imageFixups)
        }
        var checked: [String: Int] = [:]
        for (index, node) in analysis.graph.nodes.enumerated() {
            let base = analysis.plans[index].preferredBase
            for (name, address) in try Self.weakLookupBinds(node.image) {
                guard let winner = winners[name] else { continue }
                // The last fixup written at a location is what stays in memory.
                let fixup = try #require(fixups[index].last { $0.vmOffset == address &- base })
                guard case let .bind(.image(target, _), _) = fixup.kind else {
                    Issue.record("\(app): \(name) in \(app.imageName(node.path)) is not bound into an image: \(fixup.kind)")
                    continue
                }
                #expect(app.imageName(analysis.graph.nodes[target].path) == winner,
                        "\(app): \(name) referenced by \(app.imageName(node.path))")
                checked[name, default: 0] += 1
            }
        }
        // Not vacuous: every listed symbol has at least one weak-lookup reference.
        #expect(Set(checked.keys) == Set(winners.keys), "\(app): checked \(checked)")
    }

    /// (symbol, unslid address) of each bind that goes through weak coalescing: chained
    /// binds with the weak-lookup ordinal, or the entries of the weak-bind opcode stream.
    static func weakLookupBinds(_ image: MachOImage) throws -> [(String, UInt64)] {
        var binds: [(String, UInt64)] = []
        if let chained = try image.parseChainedFixups() {
            try chained.forEachFixup(in: image) { (fixup) throws(MachOError) in
                if let bound = fixup.boundImport, bound.libraryOrdinal == BindFixup.ordinalWeakLookup {
                    binds.append((bound.name, fixup.address))
                }
            }
        } else {
            for fixup in try image.bindFixups(.weak) {
                if let address = fixup.address { binds.append((fixup.symbolName, address)) }
            }
        }
        return binds
    }
}
