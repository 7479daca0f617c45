import Benchmark
import Foundation
import MachOReader

/// Reader benchmarks (decoding every fixup and export of the corpus's largest files) and
/// closure benchmarks (ClosureBenchmarks.swift).
/// Run with `make bench-reader` (or `swift package --package-path Benchmarks benchmark`).
let corpus = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("shared/corpus")

/// The largest slice of any corpus file with the given fixup style.
func largestImage(chained: Bool) -> (name: String, image: MachOImage) {
    var best: (String, MachOImage)?
    let walker = FileManager.default.enumerator(at: corpus, includingPropertiesForKeys: nil)
    while let url = walker?.nextObject() as? URL {
        guard let data = try? Data(contentsOf: url), let file = try? UniversalFile(parsing: Array(data)) else { continue }
        for slice in file.slices {
            guard let image = try? file.image(slice), (image.chainedFixups != nil) == chained else { continue }
            if best == nil || image.view.count > best!.1.view.count {
                best = (url.deletingLastPathComponent().lastPathComponent + "/" + url.lastPathComponent, image)
            }
        }
    }
    guard let best else { fatalError("no corpus image at \(corpus.path)") }
    return best
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration.maxDuration = .seconds(2)
    Benchmark.defaultConfiguration.metrics = [.wallClock, .instructions, .mallocCountTotal]

    let opcodes = largestImage(chained: false)
    let chained = largestImage(chained: true)

    Benchmark("every opcode fixup of \(opcodes.name)") { benchmark in
        for _ in benchmark.scaledIterations {
            var count = 0
            try opcodes.image.forEachRebaseFixup { _ in count += 1 }
            for stream in BindStreamKind.allCases {
                try opcodes.image.forEachBindFixup(in: stream) { _ in count += 1 }
            }
            blackHole(count)
        }
    }

    Benchmark("every chained fixup of \(chained.name)") { benchmark in
        for _ in benchmark.scaledIterations {
            var count = 0
            try chained.image.forEachChainedFixup { _ in count += 1 }
            blackHole(count)
        }
    }

    Benchmark("export trie walk of \(chained.name)") { benchmark in
        for _ in benchmark.scaledIterations {
            var count = 0
            try chained.image.exportTrie()?.forEachSymbol { _ in count += 1 }
            blackHole(count)
        }
    }

    let trie = try? chained.image.exportTrie()
    let names = (try? trie?.allSymbols().map(\.name)) ?? []
    Benchmark("export trie lookup by name, \(names.count) names") { benchmark in
        for _ in benchmark.scaledIterations {
            for name in names { blackHole(try trie?.lookup(name)) }
        }
    }

    closureBenchmarks()
    dyld2Benchmarks()

    Benchmark("parse header and load commands of \(opcodes.name)") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try MachOImage(parsing: opcodes.image.view))
        }
    }
}
