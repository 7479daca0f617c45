import LoaderCore
import MachOReader
import LaunchPlan

/// dyld2's fixup work: an image's opcode streams or fixup chains interpreted, every bound
/// symbol looked up by name, each fixup handed on fully resolved (the slow path writes it,
/// the closure builder records it).
package struct FixupResolver {
    package let graph: DependencyGraph
    package let plans: [ImagePlan]
    var lookup: SymbolLookup
    /// Symbol lookups by name so far.
    package var symbolLookups: Int { lookup.lookups }
    package private(set) var rebases = 0
    package private(set) var binds = 0
    /// The current chained image's resolved imports, and its binds met by the walk, written
    /// once the imports are resolved (all reused from image to image).
    private var importTargets: [BindTarget] = []
    private var importAddends: [Int64] = []
    private var bindSites: [ChainedBindSite] = []
    /// The launch's interposing tuples, resolved before any bind (``Interposing``).
    package private(set) var interposing = Interposing()

    package init(graph: DependencyGraph, plans: [ImagePlan]) throws(LoadError) {
        self.graph = graph
        self.plans = plans
        lookup = try SymbolLookup(graph: graph)
        interposing = try resolveInterposing()
    }

    /// The tuples of every dylib loaded at launch, in load order, each slot's fixup found by a
    /// walk on a copy of this resolver (so the launch's counters see each fixup once).
    private func resolveInterposing() throws(LoadError) -> Interposing {
        var interposing = Interposing()
        for index in graph.nodes.indices where graph.loadedAtLaunch[index] {
            let image = graph.nodes[index].image
            guard image.header.fileType == .dylib else { continue }
            let sections = image.sections.filter(\.holdsInterposingTuples)
            guard !sections.isEmpty else { continue }
            let base = plans[index].preferredBase
            let slots = sections.map { ($0.address &- base)..<($0.address &- base &+ $0.size) }
            var found: [UInt64: ResolvedFixup.Kind] = [:]
            var peek = self
            try peek.resolve(image: index) { (fixup) throws(LoadError) in
                if slots.contains(where: { $0.contains(fixup.vmOffset) }) { found[fixup.vmOffset] = fixup.kind }
            }
            // Whole (replacement, replacee) pairs of 8-byte pointers.
            for slot in slots {
                for tuple in stride(from: slot.lowerBound, to: slot.upperBound, by: 16) where tuple &+ 16 <= slot.upperBound {
                    if let replacement = Interposing.target(of: found[tuple], image: index),
                       let replacee = Interposing.target(of: found[tuple + 8], image: index) {
                        interposing.add(image: index, replacement: replacement, replacee: replacee)
                    }
                }
            }
        }
        return interposing
    }

    /// Resolves every fixup of image `index`, handing each to `sink`: first its rebases (its
    /// rebase opcode stream, or its chains, walked once, noting where each bind is), then,
    /// after `afterRebases`, its binds, every symbol looked up by name (bind, lazy-bind and
    /// weak-bind streams, or each chained import once). Nothing is allocated per fixup.
    package mutating func resolve(
        image index: Int, _ sink: (ResolvedFixup) throws(LoadError) -> Void, afterRebases: () -> Void = {}
    ) throws(LoadError) {
        try withoutActuallyEscaping(sink) { (body) throws(LoadError) in
            var calling = CallingSink(body: body)
            try resolve(image: index, into: &calling, afterRebases: afterRebases)
        }
    }

    /// ``resolve(image:_:afterRebases:)`` into a specialized `sink`: the slow path's loop, with
    /// no closure call per fixup.
    package mutating func resolve<Sink: FixupSink>(
        image index: Int, into sink: inout Sink, afterRebases: () -> Void = {}
    ) throws(LoadError) {
        let image = graph.nodes[index].image
        let base = plans[index].preferredBase
        try LoadError.reading(graph.nodes[index].path, anyError: { () throws in
            if image.chainedFixups != nil {
                guard let chains = try image.parseChainedFixupChains() else { return afterRebases() }
                // One walk over the chains, as dyld2 makes: rebases handed on as they are met,
                // binds kept until the imports are resolved. A sink that only writes takes
                // rebases straight from the raw walk.
                bindSites.removeAll(keepingCapacity: true)
                if let writer = sink.rebaseWriter,
                   let stored = UnsafeChainedRebaseWalk.walk(chains, image: image, preferredBase: base, writer: writer, binds: &bindSites) {
                    rebases += stored
                } else {
                    try walkChecked(chains, image: image, index: index, base: base, &sink)
                }
                afterRebases()
                try resolveChainedImports(chains, index: index)
                for site in bindSites {
                    try sink.take(ResolvedFixup(vmOffset: site.vmOffset, kind: .bind(
                        importTargets[site.importOrdinal], addend: importAddends[site.importOrdinal] &+ site.addend)))
                }
                binds += bindSites.count
            } else {
                try resolveOpcodeRebases(image, base: base, &sink)
                afterRebases()
                try resolveOpcodeBinds(image, index: index, base: base, &sink)
            }
        })
    }

    /// The chains walked through the checked cursor, for a sink that records or an image
    /// ``UnsafeChainedRebaseWalk`` does not take: rebases to `sink`, binds into `bindSites`
    /// (emptied first: a raw walk that stopped may have noted some).
    private mutating func walkChecked<Sink: FixupSink>(
        _ chains: ChainedFixupChains, image: MachOImage, index: Int, base: UInt64, _ sink: inout Sink
    ) throws {
        bindSites.removeAll(keepingCapacity: true)
        var cursor = ChainedPointerCursor(chains, in: image)
        while let site = try cursor.next() {
            switch site.pointer {
            case let .rebase(target):
                try sink.take(ResolvedFixup(vmOffset: site.address &- base, kind: .rebase(
                    targetOffset: target.targetAddress(imageBase: base) &- base, high8: target.high8)))
                rebases += 1
            case let .bind(chainedBind):
                bindSites.append(ChainedBindSite(
                    vmOffset: site.address &- base, importOrdinal: Int(chainedBind.importOrdinal), addend: chainedBind.addend))
            case .authRebase, .authBind, .nonPointer:
                throw LoadError.unusable(
                    path: graph.nodes[index].path,
                    reason: "\(site.format.name) fixups (arm64e pointer authentication, 32-bit) are not supported")
            }
        }
    }

    /// Every chained import resolved once, in import order, into `importTargets` and `importAddends`.
    private mutating func resolveChainedImports(_ chains: ChainedFixupChains, index: Int) throws {
        let table = chains.importTable
        importTargets.removeAll(keepingCapacity: true)
        importAddends.removeAll(keepingCapacity: true)
        for ordinal in 0..<table.count {
            let entry = try table.entry(ordinal)
            let name = try table.name(of: entry, index: ordinal)
            if let target = try lookup.resolve(name, ordinal: entry.libraryOrdinal, from: index) {
                importTargets.append(interposing.apply(target, for: index))
            } else {
                importTargets.append(try missing(name, weakImport: entry.weakImport, ordinal: entry.libraryOrdinal, from: index))
            }
            importAddends.append(entry.addend)
        }
    }

    private mutating func resolveOpcodeRebases<Sink: FixupSink>(_ image: MachOImage, base: UInt64, _ sink: inout Sink) throws {
        var decoder = try RebaseOpcodeDecoder(image)
        let view = image.view
        let segmentFileOffsets = image.segments.map(\.fileOffset)
        while let fixup = try decoder.next() {
            // The unslid pointer the linker wrote is in the file. A tagged pointer (C++ RTTI
            // sets the top bit) keeps its top byte as high8, as chained rebases do.
            let target = RebaseTarget(bits: try view.u64(Int(segmentFileOffsets[fixup.segmentIndex] + fixup.segmentOffset)) &- base)
            try sink.take(ResolvedFixup(vmOffset: fixup.address &- base, kind: .rebase(targetOffset: target.offset, high8: target.high8)))
            rebases += 1
        }
    }

    private mutating func resolveOpcodeBinds<Sink: FixupSink>(
        _ image: MachOImage, index: Int, base: UInt64, _ sink: inout Sink
    ) throws {
        for stream in BindStreamKind.allCases {
            var decoder = try BindOpcodeDecoder(image, stream: stream)
            while let entry = try decoder.nextEntry() {
                guard let location = entry.location else { continue }  // a strong-definition marker
                // The weak stream's ordinal is the weak lookup: coalescing.
                let found = try lookup.resolve(entry.symbolName, ordinal: entry.libraryOrdinal, from: index)
                let target = if let found { interposing.apply(found, for: index) } else {
                    try missing(entry.symbolName, weakImport: entry.flags.contains(.weakImport), ordinal: entry.libraryOrdinal, from: index)
                }
                try sink.take(ResolvedFixup(vmOffset: location.address &- base, kind: .bind(target, addend: entry.addend)))
                binds += 1
            }
        }
    }

    /// What an import found nowhere binds to: 0 for a weak import, else the missing-symbol
    /// error. Called only then: a call on every lookup would copy the resolver's state.
    private func missing(_ name: ByteView, weakImport: Bool, ordinal: Int, from index: Int) throws(LoadError) -> BindTarget {
        if weakImport { return .missingWeakImport }
        // A whole weak-linked dylib missing: only weak imports may use it.
        let missingDylib = lookup.namesMissingDylib(ordinal: ordinal, from: index) ? " (weak-linked, missing)" : ""
        throw .missingSymbol(symbol: name.string, importedBy: graph.nodes[index].path,
                             expectedIn: lookup.libraryName(ordinal: ordinal, from: index) + missingDylib)
    }
}

/// A chained bind the walk met (offset from the image's preferred base), written once the imports are resolved.
struct ChainedBindSite {
    let vmOffset: UInt64
    let importOrdinal: Int
    let addend: Int64
}
