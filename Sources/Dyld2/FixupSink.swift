import LoaderCore

/// Where ``FixupResolver`` hands each resolved fixup: the slow path's writer (specialized,
/// so its loop makes no call through a closure per fixup), or a closure.
public protocol FixupSink {
    mutating func take(_ fixup: ResolvedFixup) throws(LoadError)
}

/// A sink that calls a closure with each fixup.
struct CallingSink: FixupSink {
    let body: (ResolvedFixup) throws(LoadError) -> Void

    func take(_ fixup: ResolvedFixup) throws(LoadError) { try body(fixup) }
}

/// The slow path's sink: stores each fixup's value into its mapped image and, when asked
/// (`dyld3 compare`), records it.
struct MemoryFixupSink: FixupSink {
    let writer: ImageWriter
    let imageBases: [UInt64]
    /// The fixups written so far, when they are recorded.
    var recorded: [ResolvedFixup]?

    @inline(__always)
    mutating func take(_ fixup: ResolvedFixup) throws(LoadError) {
        try writer.store(fixup.value(imageBase: writer.base, imageBases: imageBases), vmOffset: fixup.vmOffset)
        recorded?.append(fixup)
    }
}
