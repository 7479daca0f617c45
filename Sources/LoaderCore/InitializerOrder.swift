/// The order in which images' initializers run, as dyld decides it (dyld4
/// `Loader::runInitializersBottomUpPlusUpwardLinks`; dyld-852 `ImageLoader::processInitializers`
/// and dyld3 `ClosureBuilder::computeInitOrder` agree):
///
/// * bottom up from each root: non-upward dependencies first, depth-first in load-command
///   order, then the image; an image is marked when entered, so a cycle ends there;
/// * an upward dependency is set aside (once); after the root's initializers, those set aside
///   are initialized bottom up in order, their own upward links set aside for the next round,
///   until none is left. An image also reached by an ordinary link runs where that puts it.
///
/// The walk is iterative: graph depth costs heap, not stack.
package enum InitializerOrder {
    /// Node indices in the order their initializers run: the inserted libraries first, each
    /// bottom up (dyld4 `runAllInitializersForMain`, dyld-852 `initializeMainExecutable`),
    /// then the roots (host, then app).
    package static func compute(_ graph: DependencyGraph) -> [Int] {
        var walk = BottomUpWalk(graph: graph)
        for inserted in graph.inserted { walk.initializePlusUpwardLinks(inserted) }
        for root in 0..<graph.rootCount { walk.initializePlusUpwardLinks(root) }
        // Anything left (only reachable from images that are themselves unreachable) runs last.
        for node in graph.nodes.indices { walk.initializePlusUpwardLinks(node) }
        return walk.order
    }

    /// The nodes a `dlopen` of `root` initializes, in order: bottom up, as for a launch's root,
    /// over the nodes from `firstNew` on (dyld4 skips images already initialized).
    package static func forOpen(_ graph: DependencyGraph, root: Int, firstNew: Int) -> [Int] {
        var walk = BottomUpWalk(graph: graph, initializedBefore: firstNew)
        walk.initializePlusUpwardLinks(root)
        return walk.order
    }
}

/// One bottom-up walk over a launch's graph: the visited marks and the order so far.
struct BottomUpWalk {
    let graph: DependencyGraph
    private(set) var order: [Int] = []
    private var visited: [Bool]
    /// Whether a node is in the current round's upward links set aside (no list search).
    private var setAside: [Bool]

    /// `initializedBefore`: the nodes below it count as visited (already initialized).
    init(graph: DependencyGraph, initializedBefore: Int = 0) {
        self.graph = graph
        visited = Array(repeating: true, count: initializedBefore) + Array(repeating: false, count: graph.nodes.count - initializedBefore)
        setAside = Array(repeating: false, count: graph.nodes.count)
    }

    /// `runInitializersBottomUpPlusUpwardLinks`: `node` bottom up, then the upward links set aside, round after round.
    mutating func initializePlusUpwardLinks(_ node: Int) {
        var danglingUpwards: [Int] = []
        initializeBottomUp(node, danglingUpwards: &danglingUpwards)
        while !danglingUpwards.isEmpty {
            for upward in danglingUpwards { setAside[upward] = false }
            var next: [Int] = []
            for upward in danglingUpwards { initializeBottomUp(upward, danglingUpwards: &next) }
            danglingUpwards = next
        }
    }

    /// `runInitializersBottomUp`, with an explicit stack of (node, next dependency).
    private mutating func initializeBottomUp(_ start: Int, danglingUpwards: inout [Int]) {
        guard !visited[start] else { return }
        visited[start] = true
        var stack: [(node: Int, next: Int)] = [(start, 0)]
        while let top = stack.last {
            let dependencies = graph.nodes[top.node].dependencies
            guard top.next < dependencies.count else {
                stack.removeLast()
                order.append(top.node)
                continue
            }
            stack[stack.count - 1].next += 1
            let edge = dependencies[top.next]
            guard let target = edge.target else { continue }  // a missing weak dylib
            if edge.kind == .upward {
                if !setAside[target] {
                    setAside[target] = true
                    danglingUpwards.append(target)
                }
            } else if !visited[target] {
                visited[target] = true
                stack.append((target, 0))
            }
        }
    }
}
