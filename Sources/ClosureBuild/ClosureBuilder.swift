import ClosureCache
import LoaderCore
import LaunchPlan
import ClosureFormat
import MachOReader

/// Builds a launch closure at install time: runs every analysis the slow path runs
/// (paths, graph, symbol resolution, initializer order) once, and writes down the result.
package enum ClosureBuilder {
    /// The closure for launching `roots` (host first, if any) with the `inserted` libraries
    /// for `arch` under `root`. An app that cannot launch gets no closure: the slow path's
    /// error is thrown, and so is the first image `policy` refuses (the closure's binding
    /// records the policy).
    package static func build(roots: [String], inserted: [String] = [], arch: String, root: String?,
                             contentOnlyIdentity: Bool = false, policy: SigningPolicy = .default) throws(LoadError) -> LaunchClosure {
        var targets: [BindTarget] = []
        var targetIndex: [BindTarget: Int] = [:]
        // Each image's fixups are encoded as runs as soon as they are resolved.
        var runs: [(rebases: FixupRuns.Encoded, binds: FixupRuns.Encoded)] = []
        let analysis = try LaunchAnalysis(roots: roots, inserted: inserted, arch: arch, root: root) { (plan, fixups) throws(LoadError) in
            runs.append((FixupRuns.encodeRebases(fixups, plan: plan),
                         FixupRuns.encodeBinds(fixups, plan: plan, targets: &targets, targetIndex: &targetIndex)))
        }
        var objc = ClosureObjC.none
        if let setup = analysis.objc {
            objc.loads = setup.loads
            for (index, writes) in setup.writes.enumerated() {
                let encoded = FixupRuns.encodeBinds(writes, plan: analysis.plans[index], targets: &targets, targetIndex: &targetIndex)
                objc.bindRuns.append(encoded.count == 0 ? [] : encoded.bytes[...])
                objc.bindCounts.append(encoded.count)
            }
        }
        // A signed image must verify whole, as dyld2 checks it before code runs; the closure
        // keeps its cdHash, checked again at every launch, and what the policy decided by.
        var signatures: [(path: String, signature: SignedImage?)] = []
        for node in analysis.graph.nodes { signatures.append((node.path, try CodeSigning.verify(node.image, path: node.path))) }
        try policy.check(signatures)
        var images: [ClosureImage] = []
        for (index, node) in analysis.graph.nodes.enumerated() {
            images.append(try imageRecord(node, plan: analysis.plans[index], signature: signatures[index].signature,
                                          contentOnlyIdentity: contentOnlyIdentity, rebases: runs[index].rebases, binds: runs[index].binds,
                                          initializers: analysis.initializers[index]))
        }
        return LaunchClosure(
            binding: ClosureBinding(request: roots, inserted: inserted, arch: arch, root: root, policy: policy), contentOnlyIdentity: contentOnlyIdentity,
            images: images, rootCount: analysis.graph.rootCount, bindTargets: targets,
            initializerOrder: analysis.initializerOrder, entryOffset: analysis.entryOffset,
            missingWeakDylibs: analysis.graph.missingWeakDylibs.map { ClosureMissingDylib(installName: $0.installName, neededBy: $0.neededBy) },
            objc: objc, threadLocals: ClosureThreadLocals(setups: analysis.threadLocals, hostServices: analysis.hostServices))
    }

    /// The record of one image of a closure: its identity taken now (with its verified
    /// `signature`), its plan, links, fixup runs and initializers.
    static func imageRecord(_ node: DependencyGraph.Node, plan: ImagePlan, signature: SignedImage?, contentOnlyIdentity: Bool,
                            rebases: FixupRuns.Encoded, binds: FixupRuns.Encoded, initializers: [UInt64]) throws(LoadError) -> ClosureImage {
        let identity: ImageIdentity
        do throws(ClosureError) {
            identity = try ImageIdentity.of(node.file, contentOnly: contentOnlyIdentity, signature: signature)
        } catch {
            throw .failed(path: node.path, cause: error)
        }
        var record = ClosureImage(
            path: node.path, installName: node.installName ?? "", identity: identity, plan: plan,
            dependencies: node.dependencies.map { ClosureDependency(installName: $0.installName, kind: $0.kind, target: $0.target ?? -1) },
            initializers: initializers, rpaths: node.image.rpaths, absentPaths: node.absentCandidates,
            rebaseRuns: [], bindRuns: [], rebaseCount: 0, bindCount: 0, fixupPageIndex: FixupPageIndex(rebases: nil, binds: nil))
        record.setRuns(rebases: rebases, binds: binds)
        record.exportTrie = node.image.exportTrieRange.map { $0.vmOffset..<($0.vmOffset + $0.size) }
        return record
    }

    /// `image` as a dlopen closure lists an image loaded before it: no fixups, no initializers.
    static func withoutFixups(_ image: ClosureImage) -> ClosureImage {
        var image = image.withoutFixups()
        image.initializers = []
        return image
    }

    /// An image's initializers: each `__mod_init_func` slot's function is the target of the
    /// last rebase `fixups` write there.
    static func initializerOffsets(_ image: MachOImage, plan: ImagePlan, fixups: [ResolvedFixup]) throws(LoadError) -> [UInt64] {
        try Initializers.offsets(of: image, plan: plan) { slot in
            guard case let .rebase(targetOffset, _) = fixups.last(where: { $0.vmOffset == slot })?.kind else { return nil }
            return targetOffset
        }
    }
}
