import Dyld2
import ClosureCache
import LoaderCore
import LaunchPlan
import MachOReader
import ClosureFormat
import RuntimeServices

/// Builds dlopen closures (``ClosureDlopen``): the analysis a `dlopen` of one path makes after
/// a launch, written down, at install time (`--dlopen PATH`) or, as dyld3 did, in process for
/// a path the fast path has no closure for (then after earlier `dlopen`s too).
package enum DlopenClosureBuilder {
    /// The dlopen closure of `path` after `launch` (the closure of `request`) and the
    /// `dlopen`s of `earlier` (each path that added images, in order), whose images are
    /// `loaded` (the launch's records, then those added: the graph is loaded again and must
    /// name the same files), encoded; `.loaded` when `path` names an image already loaded.
    package static func build(_ path: String, request: LaunchOptions, launch: LaunchClosure, loaded: [ClosureImage],
                             earlier: [String] = []) throws(LoadError) -> DlopenResolution {
        let resolution = try resolve(path, request: request, launch: launch, loaded: loaded, mapped: { _ in nil }, earlier: earlier, state: nil)
        guard case let .built(built) = resolution else { return resolution }
        return .closure(try built.encode())
    }

    /// ``build(_:request:launch:loaded:earlier:)`` without the encoding: the images' records,
    /// fixups and initializer order as a `dlopen` applies them at once, the encoding left to
    /// ``BuiltDlopen/encode`` (dyld3 in process). `state`: the graph a build of this launch
    /// kept (``BuiltDlopen/builderState``), used when it holds the images loaded so far; else
    /// the launch's graph is made again from its closure's records, each image parsed where
    /// `mapped` gives its memory (else from its file).
    package static func resolve(_ path: String, request: LaunchOptions, launch: LaunchClosure, loaded: [ClosureImage],
                               mapped: (Int) -> ByteView?, earlier: [String], state: (any Sendable)?) throws(LoadError) -> DlopenResolution {
        func holdsLoaded(_ graph: DependencyGraph) -> Bool {
            graph.nodes.count == loaded.count && graph.nodes.indices.allSatisfy { graph.nodes[$0].path == loaded[$0].path }
        }
        var graph: DependencyGraph
        if let kept = state as? DependencyGraph, holdsLoaded(kept) {
            graph = kept
        } else if earlier.isEmpty {
            // The launch's graph as its closure recorded it: its files, no path searched again.
            graph = try DependencyGraph(
                recorded: loaded.indices.map { index in
                    let image = loaded[index]
                    let slice = image.plan.segments.first { $0.vmOffset == 0 }.flatMap { Int(exactly: $0.fileOffset) }
                    return DependencyGraph.RecordedImage(
                        path: image.path,
                        dependencies: image.dependencies.map { DependencyGraph.Edge(installName: $0.installName, kind: $0.kind, target: $0.target < 0 ? nil : $0.target) },
                        absent: image.absentPaths, mapped: slice.flatMap { slice in mapped(index).map { ($0, slice) } })
                },
                rootCount: launch.rootCount, insertedCount: request.inserted.count,
                missingWeakDylibs: launch.missingWeakDylibs.map { DependencyGraph.MissingWeakDylib(installName: $0.installName, neededBy: $0.neededBy, tried: []) },
                arch: request.arch, root: request.root)
        } else {
            graph = try DependencyGraph(roots: request.roots, inserted: request.inserted, arch: request.arch, root: request.root)
            for opened in earlier { _ = try graph.open(opened, arch: request.arch) }
        }
        guard holdsLoaded(graph), graph.nodes.indices.allSatisfy({ loaded[$0].identity.uuid == nil || graph.nodes[$0].image.uuid == loaded[$0].identity.uuid }) else {
            throw .unusable(path: path, reason: "cannot be opened by a dlopen closure: the images loaded so far are no longer the files found on disk")
        }
        let (node, added) = try graph.open(path, arch: request.arch)
        guard !added.isEmpty else { return .loaded(path: graph.nodes[node].path) }
        var plans = loaded.map(\.plan)
        for index in added {
            let image = graph.nodes[index]
            if ThreadLocals.hasDescriptors(image.image) {
                throw .unusable(path: image.path, reason: "has thread-local variables: dlopen sets them up only for images loaded at launch")
            }
            if (try? ObjCSections(image: image.image)) != nil {
                throw .unusable(path: image.path, reason: "has Objective-C metadata: dlopen runs the Objective-C step only for images loaded at launch")
            }
            plans.append(try ImagePlan(image: image.image, path: image.path, sliceOffset: image.file.sliceOffset))
        }
        var signatures: [(path: String, signature: SignedImage?)] = [(loaded[0].path, loaded[0].identity.signature)]
        for index in added { signatures.append((graph.nodes[index].path, try CodeSigning.verify(graph.nodes[index].image, path: graph.nodes[index].path))) }
        try request.signingPolicy.check(signatures)

        var resolver = try FixupResolver(graph: graph, plans: plans)
        var images = loaded.map(ClosureBuilder.withoutFixups)
        var fixups: [[ResolvedFixup]] = []
        for (position, index) in added.enumerated() {
            var imageFixups: [ResolvedFixup] = []
            try resolver.resolve(image: index) { (fixup) throws(LoadError) in imageFixups.append(fixup) }
            let initializers = try ClosureBuilder.initializerOffsets(graph.nodes[index].image, plan: plans[index], fixups: imageFixups)
            images.append(try ClosureBuilder.imageRecord(
                graph.nodes[index], plan: plans[index], signature: signatures[position + 1].signature, contentOnlyIdentity: launch.contentOnlyIdentity,
                rebases: .none, binds: .none,
                initializers: initializers))
            fixups.append(imageFixups)
        }
        let initializerOrder = InitializerOrder.forOpen(graph, root: node, firstNew: added.lowerBound)
        let missingWeakDylibs = graph.missingWeakDylibs.map { ClosureMissingDylib(installName: $0.installName, neededBy: $0.neededBy) }
        let resolvedPath = graph.nodes[node].path, first = added.lowerBound
        let records = images, resolved = fixups
        return .built(BuiltDlopen(
            requested: path, resolvedPath: resolvedPath, opened: node, images: images, firstAdded: first, initializerOrder: initializerOrder,
            fixups: fixups, builderState: graph) { () throws(LoadError) -> ClosureDlopen in
                var targets: [BindTarget] = []
                var targetIndex: [BindTarget: Int] = [:]
                var images = records
                for (position, imageFixups) in resolved.enumerated() {
                    let plan = images[first + position].plan
                    images[first + position].setRuns(rebases: FixupRuns.encodeRebases(imageFixups, plan: plan),
                                                     binds: FixupRuns.encodeBinds(imageFixups, plan: plan, targets: &targets, targetIndex: &targetIndex))
                }
                var closure = LaunchClosure(
                    binding: launch.binding, contentOnlyIdentity: launch.contentOnlyIdentity, images: images, rootCount: launch.rootCount,
                    bindTargets: targets, initializerOrder: initializerOrder, entryOffset: nil, missingWeakDylibs: missingWeakDylibs)
                // The launch's images it names may lie in the shared cache the launch binds into.
                closure.sharedCache = launch.sharedCache
                return ClosureDlopen(requested: path, resolvedPath: resolvedPath, opened: node, body: closure.encodedBody())
            })
    }
}
