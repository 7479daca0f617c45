import ClosureBuild
import ClosureFormat
import Foundation
import LaunchPlan
import LoaderCore
import TestSupport
import Testing

/// The launch graph a run-time dlopen closure starts from, made again from the launch
/// closure's records (`DependencyGraph(recorded:)`, no path searched), against the graph the
/// path search builds from the files: the same images in the same order, the same edges,
/// the same loaders and launch flags; and records that disagree with the files are refused.
@Suite(.bounded) struct RecordedGraphTests {
    static func recorded(_ closure: LaunchClosure) -> [DependencyGraph.RecordedImage] {
        closure.images.map { image in
            DependencyGraph.RecordedImage(
                path: image.path,
                dependencies: image.dependencies.map { DependencyGraph.Edge(installName: $0.installName, kind: $0.kind, target: $0.target < 0 ? nil : $0.target) },
                absent: image.absentPaths, mapped: nil)
        }
    }

    @Test(arguments: ["dlopen", "reexport", "weak-coalesce", "cycle-upward", "init-upward", "paths", "weak-import"])
    func theRecordedGraphIsTheSearchedOne(name: String) throws {
        let app = try FixtureApp.named(name)
        let closure = try ClosureBuilder.build(roots: [app.executable], arch: app.arch, root: app.root)
        let searched = try DependencyGraph(roots: [app.executable], arch: app.arch, root: app.root)
        let recorded = try DependencyGraph(
            recorded: Self.recorded(closure), rootCount: closure.rootCount, insertedCount: 0,
            missingWeakDylibs: closure.missingWeakDylibs.map { .init(installName: $0.installName, neededBy: $0.neededBy, tried: []) },
            arch: app.arch, root: app.root)
        #expect(recorded.nodes.map(\.path) == searched.nodes.map(\.path))
        #expect(recorded.nodes.map(\.dependencies) == searched.nodes.map(\.dependencies))
        #expect(recorded.nodes.map(\.loader) == searched.nodes.map(\.loader))
        #expect(recorded.nodes.map(\.absentCandidates) == searched.nodes.map(\.absentCandidates))
        #expect(recorded.loadedAtLaunch == searched.loadedAtLaunch)
        #expect(recorded.missingWeakDylibs.map(\.installName) == searched.missingWeakDylibs.map(\.installName))
    }

    @Test func recordsThatDisagreeWithTheFilesAreRefused() throws {
        let app = try FixtureApp.named("dlopen")
        let closure = try ClosureBuilder.build(roots: [app.executable], arch: app.arch, root: app.root)
        func build(_ images: [DependencyGraph.RecordedImage]) throws -> DependencyGraph {
            try DependencyGraph(recorded: images, rootCount: closure.rootCount, insertedCount: 0, missingWeakDylibs: [], arch: app.arch, root: app.root)
        }
        var images = Self.recorded(closure)
        let first = try #require(images[0].dependencies.first)
        // An edge past the images recorded.
        images[0].dependencies[0] = DependencyGraph.Edge(installName: first.installName, kind: first.kind, target: images.count + 3)
        #expect(throws: LoadError.self) { try build(images) }
        // A dependency the image's load commands do not name.
        images = Self.recorded(closure)
        images[0].dependencies[0] = DependencyGraph.Edge(installName: "/usr/lib/libnothere.dylib", kind: first.kind, target: first.target)
        #expect(throws: LoadError.self) { try build(images) }
        // An image the edges never reach.
        images = Self.recorded(closure)
        images.append(images[images.count - 1])
        #expect(throws: LoadError.self) { try build(images) }
    }
}
