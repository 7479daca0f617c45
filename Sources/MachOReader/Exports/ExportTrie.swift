/// An export trie: the prefix tree of exported names that dyld searches when it binds a
/// symbol to an image (LC_DYLD_EXPORTS_TRIE, or the export range of LC_DYLD_INFO).
///
/// Each node is a ULEB128 terminal size, that many bytes of export info when the path to
/// the node spells an exported name (see ``ExportedSymbol``), a one-byte child count, and
/// per child a NUL-terminated edge label and the ULEB128 offset of the child node from the
/// start of the trie.
///
/// Nothing is decoded up front beyond the root: ``lookup(_:)`` reads only the nodes on the
/// path to one name, and ``forEachSymbol(_:)`` walks the whole trie. Hostile tries cannot
/// make either loop or blow up: both visit a node at most once (a child leading back to a
/// node on the path is a cycle, a node with two parents is an error too), and a name may
/// not grow longer than the trie.
package struct ExportTrie: Sendable {
    /// The trie's bytes.
    package let view: ByteView

    /// A trie over `view`; the root node, when there is one, must be well formed.
    package init(parsing view: ByteView) throws(MachOError) {
        self.view = view
        if view.count > 0 { _ = try node(at: 0) }
    }

    /// The exported symbol named `name` (compared byte for byte in UTF-8), or nil: a
    /// convenience over ``lookup(_:path:)``, which makes no string.
    package func lookup(_ name: String) throws(MachOError) -> ExportedSymbol? {
        var path = LookupPath()
        guard let terminal = try lookup(ByteView(Array(name.utf8)), path: &path) else { return nil }
        return try ExportedSymbol(name: name, terminal: terminal, in: view)
    }

    /// Memory a lookup reuses: the offsets of the nodes on the path it walked (to refuse a
    /// cycle). Kept by the caller between lookups, so that once it has grown to the
    /// deepest path a lookup allocates nothing.
    package struct LookupPath: Sendable {
        var nodes: [Int] = []
        package init() {}
    }

    /// Paths deeper than this many nodes are checked for cycles with a set instead of a
    /// scan of the path (no real trie gets there; a hostile one stays linear).
    static let pathScanLimit = 64

    /// The terminal of the exported symbol whose name is the bytes of `name`, or nil.
    /// Reads only the nodes on the path that spells `name`, taking at each node the first
    /// child whose label continues the name, as dyld does; each label is compared with the
    /// name's bytes in place. An empty label continues any name: ld64 writes one to a
    /// child that holds the export of a name that is also a prefix. A child leading back
    /// to a node on the path is a cycle.
    ///
    /// Walked over raw memory (``UnsafeTrieWalk``) unless that walk meets something it
    /// does not answer for (a bad trie, a path deeper than ``pathScanLimit``), which the
    /// checked walk then settles with the same answer or the error.
    package func lookup(_ name: ByteView, path: inout LookupPath) throws(MachOError) -> ExportTerminal? {
        guard view.count > 0 else { return nil }
        let walk = UnsafeTrieWalk.find(name, in: view)
        switch walk {
        case let .found(node, _, _, plain?):
            return ExportTerminal(flags: plain.flags, definition: .image(offset: plain.offset), nodeOffset: node)
        case let .found(node, infoStart, infoSize, nil):
            return try ExportTerminal(parsing: try view.slice(infoStart, infoSize), nodeOffset: node, name: name.string)
        case .notFound: return nil
        case .irregular: return try checkedLookup(name, path: &path)
        }
    }

    /// ``lookup(_:path:)`` with every read checked, for any trie: a child leading back to a
    /// node on the path is a cycle.
    func checkedLookup(_ name: ByteView, path: inout LookupPath) throws(MachOError) -> ExportTerminal? {
        guard view.count > 0 else { return nil }
        var matched = 0
        path.nodes.removeAll(keepingCapacity: true)
        path.nodes.append(0)
        var deepPath: Set<Int>?
        var current = try node(at: 0)
        while true {
            if matched == name.count, let terminal = try terminal(of: current) {
                return try ExportTerminal(parsing: terminal, nodeOffset: current.offset, name: name.string)
            }
            var edge = current.childrenOffset
            var next: (offset: Int, labelEnd: Int)?
            for _ in 0..<current.childCount {
                // The label is compared with the name in place; after the first difference
                // it is only skipped.
                var position = edge
                var nameAt = matched
                var mismatch = false
                while true {
                    let byte = try view.u8(position)
                    position += 1
                    if byte == 0 { break }
                    if !mismatch {
                        if nameAt < name.count, try name.u8(nameAt) == byte { nameAt += 1 } else { mismatch = true }
                    }
                }
                let childAt = view.absolute(position)
                let childOffset = try view.uleb128(at: &position)
                if !mismatch {
                    let offset = try checkedChildOffset(childOffset, of: current, at: childAt)
                    if deepPath != nil {
                        guard deepPath!.insert(offset).inserted else { throw cycle(from: current, to: offset, at: childAt) }
                    } else {
                        guard !path.nodes.contains(offset) else { throw cycle(from: current, to: offset, at: childAt) }
                        path.nodes.append(offset)
                        if path.nodes.count > Self.pathScanLimit { deepPath = Set(path.nodes) }
                    }
                    next = (offset, nameAt)
                    break
                }
                edge = position
            }
            guard let next else { return nil }
            matched = next.labelEnd
            current = try node(at: next.offset)
        }
    }

    /// The deepest node a walk follows: far beyond any linker's output (depth grows by one
    /// per edge, and real names are a few hundred bytes), and it bounds the walk's stack
    /// (16 bytes a level) whatever the trie holds.
    package static let maxDepth = 1 << 20
    /// The longest exported name a walk builds (bytes), which bounds the name buffer and
    /// each name handed out.
    package static let maxNameLength = 1 << 24

    /// Calls `body` with every exported symbol in llvm-objdump's order: depth first, children
    /// in the order the trie lists them, a node's own symbol after those of its children.
    ///
    /// Costs memory for the path being walked (one reusable name buffer and 16 bytes a
    /// level, capped by ``maxDepth`` and ``maxNameLength``) and one bit per trie byte for
    /// the nodes reached, never for the names already handed out: a linear trie that
    /// spells `a`, `aa`, `aaa`, … costs its longest name, however much text its names add
    /// up to.
    package func forEachSymbol(_ body: (ExportedSymbol) throws(MachOError) -> Void) throws(MachOError) {
        try walk { (name, terminal, nodeOffset) throws(MachOError) in
            try body(try ExportedSymbol(name: String(decoding: name, as: UTF8.self), parsing: terminal, nodeOffset: nodeOffset))
        }
    }

    /// The name of every exported symbol whose flags hold every bit of `flagged` and none of
    /// `excluding`, in ``forEachSymbol(_:)``'s order: each terminal read no further than its
    /// flags, no string made (the bytes are valid for the call only).
    package func forEachName(flagged: UInt64, excluding: UInt64, _ body: (ArraySlice<UInt8>) -> Void) throws(MachOError) {
        try walk { (name, terminal, _) throws(MachOError) in
            var cursor = ByteCursor(terminal, at: 0)
            let flags = try cursor.uleb128()
            if flags & flagged == flagged, flags & excluding == 0 { body(name) }
        }
    }

    /// The one walk of the trie: each terminal node's name, export info and offset.
    private func walk(_ visit: (_ name: ArraySlice<UInt8>, _ terminal: ByteView, _ nodeOffset: Int) throws(MachOError) -> Void) throws(MachOError) {
        guard view.count > 0 else { return }
        let root = try node(at: 0)
        if !root.isTerminal, root.childCount == 0 { return }

        // Trie offsets fit 32 bits: both load commands give the trie's size as a uint32.
        struct Frame {
            let node: UInt32
            /// Length of the node's name: the first `nameLength` bytes of `name`.
            let nameLength: UInt32
            var childrenLeft: UInt32, nextEdge: UInt32
        }
        guard view.count <= Int(UInt32.max) else {
            throw MachOError.malformed("export trie of \(view.count) bytes is larger than a load command can describe", at: view.base)
        }
        guard var visited = VisitedOffsets(count: view.count) else {
            throw MachOError(offset: view.base, .unsupported("no memory to track the nodes of a \(view.count)-byte export trie"))
        }
        _ = visited.insert(0)
        var name: [UInt8] = []
        var stack = [Frame(node: 0, nameLength: 0, childrenLeft: UInt32(root.childCount), nextEdge: UInt32(root.childrenOffset))]
        while let top = stack.last {
            if top.childrenLeft > 0 {
                name.removeSubrange(Int(top.nameLength)...)
                var cursor = ByteCursor(view, at: Int(top.nextEdge))
                let edgeStart = cursor.absoluteOffset
                while true {
                    let byte = try cursor.u8()
                    if byte == 0 { break }
                    name.append(byte)
                }
                guard name.count <= Self.maxNameLength else {
                    throw MachOError.malformed("export trie name grows longer than \(Self.maxNameLength) bytes", at: edgeStart)
                }
                let childAt = cursor.absoluteOffset
                let parent = try node(at: Int(top.node))
                let childOffset = try checkedChildOffset(try cursor.uleb128(), of: parent, at: childAt)
                stack[stack.count - 1].childrenLeft -= 1
                stack[stack.count - 1].nextEdge = UInt32(cursor.position)
                guard visited.insert(childOffset) else {
                    if stack.contains(where: { $0.node == UInt32(childOffset) }) { throw cycle(from: parent, to: childOffset, at: childAt) }
                    throw MachOError.malformed("export trie node at \(hex(childOffset)) is the child of more than one node", at: childAt)
                }
                guard stack.count < Self.maxDepth else {
                    throw MachOError.malformed("export trie is deeper than \(Self.maxDepth) nodes", at: childAt)
                }
                let child = try node(at: childOffset)
                stack.append(Frame(
                    node: UInt32(childOffset), nameLength: UInt32(name.count),
                    childrenLeft: UInt32(child.childCount), nextEdge: UInt32(child.childrenOffset)))
            } else {
                stack.removeLast()
                let finished = try node(at: Int(top.node))
                if let terminal = try terminal(of: finished) {
                    try visit(name[..<Int(top.nameLength)], terminal, finished.offset)
                } else if finished.childCount == 0 {
                    throw MachOError.malformed(
                        "export trie node at \(hex(finished.offset)) has neither export info nor children",
                        at: view.absolute(finished.offset))
                }
            }
        }
    }

    /// Every exported symbol, in ``forEachSymbol(_:)``'s order.
    package func allSymbols() throws(MachOError) -> [ExportedSymbol] {
        var symbols: [ExportedSymbol] = []
        try forEachSymbol { symbol throws(MachOError) in symbols.append(symbol) }
        return symbols
    }

    // MARK: Nodes

    /// A node's header: where its export info and its children are.
    private struct Node {
        /// Offset of the node from the start of the trie.
        let offset: Int
        /// Trie offset and size of the export info (size 0: not a terminal).
        let infoStart: Int, infoSize: Int, childCount: Int
        /// Trie offset of the first child's edge label.
        let childrenOffset: Int

        var isTerminal: Bool { infoSize != 0 }
    }

    private func node(at offset: Int) throws(MachOError) -> Node {
        var position = offset
        let terminalSize = try view.uleb128(at: &position)
        let infoStart = position
        guard terminalSize < UInt64(view.count - infoStart) else {
            throw MachOError.malformed(
                "export trie node at \(hex(offset)) has \(terminalSize) bytes of export info, more than the trie holds",
                at: view.absolute(offset))
        }
        let size = Int(terminalSize)
        let childCount = Int(try view.u8(infoStart + size))
        return Node(offset: offset, infoStart: infoStart, infoSize: size, childCount: childCount, childrenOffset: infoStart + size + 1)
    }

    /// The node's export info, when it is a terminal.
    private func terminal(of node: Node) throws(MachOError) -> ByteView? {
        node.isTerminal ? try view.slice(node.infoStart, node.infoSize) : nil
    }

    /// A child offset, checked to name a byte of the trie.
    private func checkedChildOffset(_ offset: UInt64, of parent: Node, at absoluteOffset: Int) throws(MachOError) -> Int {
        guard offset < UInt64(view.count) else {
            throw MachOError.malformed(
                "export trie node at \(hex(parent.offset)) has a child at \(hex(offset)), past the trie's \(view.count) bytes",
                at: absoluteOffset)
        }
        return Int(offset)
    }

    private func cycle(from parent: Node, to child: Int, at absoluteOffset: Int) -> MachOError {
        MachOError.malformed(
            "export trie node at \(hex(parent.offset)) has a child leading back to node \(hex(child)) (a cycle)", at: absoluteOffset)
    }
}

extension MachOImage {
    /// The image's export trie, as dyld finds it: LC_DYLD_EXPORTS_TRIE when it has bytes,
    /// else the export range of LC_DYLD_INFO (the other way round with `dyldInfoFirst`, as
    /// llvm-objdump reads it); nil when neither has any.
    package func exportTrie(dyldInfoFirst: Bool = false) throws(MachOError) -> ExportTrie? {
        guard let data = exportTrieData(dyldInfoFirst: dyldInfoFirst) else { return nil }
        return try ExportTrie(parsing: try linkeditBytes(data))
    }

    private func exportTrieData(dyldInfoFirst: Bool = false) -> LinkeditData? {
        let ranges = dyldInfoFirst ? [dyldInfo?.export, exportsTrie] : [exportsTrie, dyldInfo?.export]
        return ranges.lazy.compactMap { $0 }.first { $0.dataSize > 0 }
    }

    /// Where the export trie lies once the image is mapped: its offset from the image's base and
    /// its size, when a segment's file bytes hold it; nil without one.
    package var exportTrieRange: (vmOffset: UInt64, size: UInt64)? {
        guard let trie = exportTrieData() else { return nil }
        let (offset, size) = (UInt64(trie.dataOffset), UInt64(trie.dataSize))
        guard let segment = segments.first(where: { offset >= $0.fileOffset && offset - $0.fileOffset <= $0.fileSize
                                                    && size <= $0.fileSize - (offset - $0.fileOffset) }) else { return nil }
        return (segment.vmAddress &- preferredLoadAddress &+ (offset - segment.fileOffset), size)
    }
}
