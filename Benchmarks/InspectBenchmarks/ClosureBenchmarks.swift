import Benchmark
import ClosureBuild
import ClosureFormat
import Dyld3
import Foundation
import ClosureCache
import LoaderCore
import LaunchMemory

/// The closure's hot spots: decoding a closure file, and the fast path's fixup loop.
/// Uses the generated 100-framework app (`make demo` or `make test` builds it).
func closureBenchmarks() {
    let repo = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    let app = repo.appendingPathComponent("build/demo-gen100")
    guard let closure = try? ClosureBuilder.build(
        roots: [app.appendingPathComponent("gen100.app/gen100").path], arch: "x86_64",
        root: app.appendingPathComponent("root").path) else {
        fatalError("build/demo-gen100 is missing: run `tools/gen-app --preset 100 --seed 1 --out build/demo-gen100`")
    }
    let file = ClosureFile.encode(closure)
    let fixups = closure.totalRebases + closure.totalBinds

    Benchmark("closure decode (\(closure.images.count) images, \(file.count) bytes)") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try ClosureFile.decode(file, path: "bench"))
        }
    }

    // The images are mapped once; the loop rewrites every fixup on each iteration.
    guard let memory = try? LaunchMemory(plans: closure.images.map(\.plan), firstSlide: nil) else {
        fatalError("cannot map the benchmark app")
    }
    let values = closure.bindTargetValues(memory)
    Benchmark("fast-path fixup loop (\(fixups) fixups)") { benchmark in
        for _ in benchmark.scaledIterations {
            for index in closure.images.indices {
                try closure.applyFixups(ofImage: index, memory: memory, targetValues: values, closurePath: "bench")
            }
        }
    }
}
