import LoaderCore
import LaunchPlan
import LaunchMemory

/// Where ``FixupResolver`` hands each resolved fixup: the slow path's writer (specialized,
/// so its loop makes no closure call per fixup), or a closure.
package protocol FixupSink {
    mutating func take(_ fixup: ResolvedFixup) throws(LoadError)
    /// Where ``UnsafeChainedRebaseWalk`` may store chained rebases directly: for a sink that only writes them.
    var rebaseWriter: ImageWriter? { get }
}

extension FixupSink {
    package var rebaseWriter: ImageWriter? { nil }
}

/// A sink that calls a closure with each fixup.
struct CallingSink: FixupSink {
    let body: (ResolvedFixup) throws(LoadError) -> Void

    func take(_ fixup: ResolvedFixup) throws(LoadError) { try body(fixup) }
}

/// The slow path's sink: stores each fixup into its mapped image and, for `dyld3 compare`, records it.
struct MemoryFixupSink: FixupSink {
    let writer: ImageWriter
    let imageBases: [UInt64]
    var recorded: [ResolvedFixup]?

    @inline(__always)
    mutating func take(_ fixup: ResolvedFixup) throws(LoadError) {
        try writer.store(fixup.value(imageBase: writer.base, imageBases: imageBases), vmOffset: fixup.vmOffset)
        recorded?.append(fixup)
    }

    /// The writer, unless fixups are recorded (then each must come through ``take(_:)``).
    var rebaseWriter: ImageWriter? { recorded == nil ? writer : nil }
}
