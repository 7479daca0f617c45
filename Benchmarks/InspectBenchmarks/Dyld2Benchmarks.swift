import Benchmark
import Dyld2
import Foundation
import LoaderCore
import LaunchPlan

/// dyld2's lookup path: every fixup of the generated 100-framework app resolved as the
/// slow path does on each launch (chains walked, every import looked up by name in the
/// export tries, weak definitions coalesced), handed to a sink that only counts. Each
/// iteration is one launch's worth of resolution, the resolver built afresh; its mallocs
/// divided by the fixups give mallocs per fixup (what remains is per image and per
/// launch: the tables the resolver builds once).
func dyld2Benchmarks() {
    let repo = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    let app = repo.appendingPathComponent("build/demo-gen100")
    guard let graph = try? DependencyGraph(
        roots: [app.appendingPathComponent("gen100.app/gen100").path], arch: "x86_64",
        root: app.appendingPathComponent("root").path),
        let plans = try? graph.nodes.map({ node throws(LoadError) in
            try ImagePlan(image: node.image, path: node.path, sliceOffset: node.file.sliceOffset)
        })
    else {
        fatalError("build/demo-gen100 is missing: run `tools/gen-app --preset 100 --seed 1 --out build/demo-gen100`")
    }
    guard var counting = try? FixupResolver(graph: graph, plans: plans) else { fatalError("cannot resolve the benchmark app") }
    for index in graph.nodes.indices { try? counting.resolve(image: index) { (_) throws(LoadError) in } }
    let label = "\(counting.rebases) rebases, \(counting.binds) binds, \(counting.symbolLookups) lookups"

    Benchmark("dyld2 bind resolution by name (\(graph.nodes.count) images, \(label))") { benchmark in
        for _ in benchmark.scaledIterations {
            var resolver = try FixupResolver(graph: graph, plans: plans)
            var written = 0
            for index in graph.nodes.indices {
                try resolver.resolve(image: index) { (_) throws(LoadError) in written += 1 }
            }
            blackHole(written)
        }
    }
}
