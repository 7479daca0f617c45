/// The lookup of one name in an export trie over raw memory: what a loader does for every
/// import on every launch, so it reads bytes through a pointer with one integer compare per
/// read instead of a checked ``ByteView`` read (a throwing call and a retain of the storage).
///
/// It answers exactly as the checked walk (``ExportTrie/lookup(_:path:)``) does, and only
/// when it can be sure of that: a read that would leave the trie, a malformed or oversized
/// ULEB128, a terminal that does not fit, a node met twice on the path (a cycle) or a path
/// deeper than ``ExportTrie/pathScanLimit`` is `irregular`, and the caller asks the checked
/// walk, which gives the error (or, for the deep path, the answer). Nodes on the path are
/// compared only once the path has taken a child that lies before its parent: until then
/// offsets only grow, so none can repeat.
enum UnsafeTrieWalk {
    enum Result {
        /// The name's terminal node (trie offset) and its export info's trie range, with the
        /// info decoded when it is the common kind (flags then an image offset, nothing
        /// else: no re-export, resolver or variant), which is what nearly every lookup finds.
        case found(node: Int, infoStart: Int, infoSize: Int, plain: (flags: UInt64, offset: UInt64)?)
        case notFound
        /// Not a trie this walk answers for: ask the checked walk.
        case irregular
    }

    /// Flags a plain terminal has none of: re-export, stub and resolver, function variant.
    static let plainFlagsMask = Int(ExportedSymbol.reexportFlag | ExportedSymbol.stubAndResolverFlag | ExportedSymbol.staticResolverFlag)

    /// Looks `name` up in the trie whose bytes are `trie` (not empty), keeping the nodes on
    /// the path on the stack (``ExportTrie/pathScanLimit`` of them).
    static func find(_ name: ByteView, in trie: ByteView) -> Result {
        unsafe trie.storage.withBytes(trie.base, trie.count) { trie in
            unsafe name.storage.withBytes(name.base, name.count) { name in unsafe find(name, in: trie) }
        }
    }

    static func find(_ name: UnsafeRawBufferPointer, in trie: UnsafeRawBufferPointer) -> Result {
        unsafe withUnsafeTemporaryAllocation(of: Int.self, capacity: ExportTrie.pathScanLimit) { path in
            unsafe find(name, in: trie, path: path)
        }
    }

    private static func find(_ name: UnsafeRawBufferPointer, in trie: UnsafeRawBufferPointer, path: UnsafeMutableBufferPointer<Int>) -> Result {
        guard let start = trie.baseAddress, trie.count > 0 else { return .irregular }
        let bytes = unsafe start.assumingMemoryBound(to: UInt8.self)
        let end = trie.count
        let nameBytes = unsafe name.baseAddress?.assumingMemoryBound(to: UInt8.self)
        let nameCount = name.count

        /// A ULEB128 at `position` (which moves past it); nil when it runs off the trie or
        /// has more than 63 significant bits (the checked walk words the error).
        @inline(__always)
        func uleb(_ position: inout Int) -> Int? {
            guard case let .value(value) = LEB128.unsigned(at: &position, { $0 < end ? unsafe bytes[$0] : nil }),
                  value <= UInt64(Int.max) else { return nil }
            return Int(value)
        }

        var node = 0
        var matched = 0
        let nodes = unsafe path.baseAddress.unsafelyUnwrapped
        unsafe nodes[0] = 0
        var depth = 1
        var backward = false
        while true {
            var position = node
            guard let infoSize = uleb(&position), infoSize < end - position else { return .irregular }
            let infoStart = position
            if matched == nameCount, infoSize != 0 {
                var field = infoStart
                var plain: (UInt64, UInt64)?
                if let flags = uleb(&field), flags & plainFlagsMask == 0, flags & 3 != 3,
                   let offset = uleb(&field), field == infoStart + infoSize {
                    plain = (UInt64(flags), UInt64(offset))
                }
                return .found(node: node, infoStart: infoStart, infoSize: infoSize, plain: plain)
            }
            position += infoSize
            let childCount = unsafe Int(bytes[position])
            position += 1
            var next = -1
            for _ in 0..<childCount {
                // Compare the label with the rest of the name; after the first difference,
                // only find its end.
                var nameAt = matched
                var mismatch = false
                while true {
                    guard position < end else { return .irregular }
                    let byte = unsafe bytes[position]
                    position += 1
                    if byte == 0 { break }
                    if !mismatch {
                        if nameAt < nameCount, unsafe nameBytes.unsafelyUnwrapped[nameAt] == byte { nameAt += 1 } else { mismatch = true }
                    }
                }
                guard let child = uleb(&position) else { return .irregular }
                if !mismatch {
                    guard child < end, depth < path.count else { return .irregular }
                    if child <= node { backward = true }
                    if backward {
                        for index in 0..<depth where unsafe nodes[index] == child { return .irregular }
                    }
                    unsafe nodes[depth] = child
                    depth += 1
                    next = child
                    matched = nameAt
                    break
                }
            }
            guard next >= 0 else { return .notFound }
            node = next
        }
    }
}
