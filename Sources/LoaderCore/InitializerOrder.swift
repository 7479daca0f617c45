/// The order in which images' initializers run, as dyld decides it: an image's
/// dependencies (not its upward links) are initialized before it, depth-first in
/// load-command order; images reached only through upward links are initialized after the
/// image that named them has finished. Each image runs once, cycles included.
public enum InitializerOrder {
    /// Node indices in the order their initializers run; `roots` (host, then app) drive it.
    public static func compute(_ graph: DependencyGraph) -> [Int] {
        var order: [Int] = []
        var visited = Set<Int>()
        func initialize(_ node: Int) {
            guard visited.insert(node).inserted else { return }
            var upward: [Int] = []
            for edge in graph.nodes[node].dependencies {
                guard let target = edge.target else { continue }
                if edge.kind == .upward { upward.append(target) } else { initialize(target) }
            }
            order.append(node)
            for target in upward { initialize(target) }
        }
        for root in 0..<graph.rootCount { initialize(root) }
        // Anything left (only reachable from images that are themselves unreachable) runs last.
        for node in graph.nodes.indices { initialize(node) }
        return order
    }
}
