import Foundation
import LoaderCore
import MachOReader
import TestSupport
import Testing

/// dyld's load order (docs/dyld-rules.md, rule 6): an image's dependencies are loaded in
/// load-command order, then each of them has its own loaded, depth first, before the next
/// one's. The oracle is that rule written out literally as dyld-852's
/// `recursiveLoadLibraries` is (recursion over a small graph), against `DependencyGraph`'s
/// iterative walk on the same graph written as Mach-O files.
@Suite(.bounded) struct LoadOrderTests {
    /// dyld-852 `ImageLoader::recursiveLoadLibraries`: mark the image, load each dependency
    /// not yet loaded (appending it to the load order), then recurse into each dependency.
    static func dyldOrder(_ graph: [[Int]]) -> [Int] {
        var order = [0]
        var marked = Set<Int>()
        func recursiveLoadLibraries(_ image: Int) {
            guard marked.insert(image).inserted else { return }
            for dependency in graph[image] where !order.contains(dependency) { order.append(dependency) }
            for dependency in graph[image] { recursiveLoadLibraries(dependency) }
        }
        recursiveLoadLibraries(0)
        return order
    }

    /// Writes `graph` (node 0 the executable, node K the dylib `dK.dylib`) into `directory`.
    static func write(_ graph: [[Int]], in directory: String) throws -> String {
        for (node, dependencies) in graph.enumerated() {
            var image = node == 0 ? MachOBuilder(fileType: .execute) : MachOBuilder(fileType: .dylib, installName: "@loader_path/d\(node).dylib")
            image.dependencies = dependencies.map { (.load, "@loader_path/d\($0).dylib") }
            try image.write(to: directory + (node == 0 ? "/main" : "/d\(node).dylib"))
        }
        return directory + "/main"
    }

    static func graphOrder(_ graph: [[Int]]) throws -> [Int] {
        let directory = NSTemporaryDirectory() + "load-order-\(getpid())-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let main = try write(graph, in: directory)
        return try DependencyGraph(roots: [main], arch: "arm64", root: nil).nodes.map { node in
            node.path == main ? 0 : Int(node.path.dropFirst(directory.count + 2).dropLast(".dylib".count))!
        }
    }

    /// The example of docs/dyld-rules.md: main → A, B; A → C; B → D; C → E loads main, A, B,
    /// C, E, D (breadth first would be main, A, B, C, D, E).
    @Test func theDocumentedExampleLoadsInDyldsOrder() throws {
        let graph = [[1, 2], [3], [4], [5], [], []]
        #expect(Self.dyldOrder(graph) == [0, 1, 2, 3, 5, 4])
        #expect(try Self.graphOrder(graph) == [0, 1, 2, 3, 5, 4])
    }

    /// Random graphs with shared dependencies, diamonds and cycles, the same order both ways.
    @Test(arguments: 1...12)
    func randomGraphsLoadInDyldsOrder(seed: Int) throws {
        var generator = SplitMix64(seed: UInt64(seed))
        let count = 6 + Int(generator.next() % 14)
        var graph: [[Int]] = Array(repeating: [], count: count)
        for node in 1..<count {
            // Every node is reachable: an edge from an earlier node, then a few more anywhere (cycles too).
            let parent = Int(generator.next() % UInt64(node))
            if !graph[parent].contains(node) { graph[parent].append(node) }
        }
        for _ in 0..<(count / 2) {
            let from = Int(generator.next() % UInt64(count)), to = 1 + Int(generator.next() % UInt64(count - 1))
            if from != to, !graph[from].contains(to) { graph[from].append(to) }
        }
        let expected = Self.dyldOrder(graph)
        #expect(expected.count == count)
        #expect(try Self.graphOrder(graph) == expected, "graph \(graph)")
    }
}
