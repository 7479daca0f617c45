import LoaderCore
import LaunchPlan
import ClosureFormat
import ClosureCache
import LaunchMemory

extension LaunchClosure {
    /// The value each bind target stands for in this launch's memory (checked to lie inside
    /// their images when the closure was read).
    package func bindTargetValues(_ memory: LaunchMemory) -> [UInt64] {
        bindTargets.values(bases: memory.images.map(\.base))
    }

    /// Writes image `index`'s rebases, then its binds, straight from their runs (``FixupRunWalk``):
    /// one bounds check per run, one target check per fixup, no allocation. A run or target the
    /// image does not allow is the closure's fault, named with `closurePath`.
    package func applyFixups(ofImage index: Int, memory: LaunchMemory, targetValues: [UInt64], closurePath: String) throws(ClosureError) {
        try applyFixups(ofImage: index, writer: memory.writer(image: index), targetValues: targetValues, closurePath: closurePath)
    }

    /// ``applyFixups(ofImage:memory:targetValues:closurePath:)`` through a writer taken
    /// beforehand: what a second thread is given.
    package func applyFixups(ofImage index: Int, writer: ImageWriter, targetValues: [UInt64], closurePath: String) throws(ClosureError) {
        let image = images[index]
        try naming(closurePath, image: index) { () throws(ClosureError) in
            try ClosureError.walking(.rebases) { () throws(FixupFault) in
                try Self.writeRebases(image.rebaseRuns, writer: writer, vmSize: image.plan.vmSize)
            }
            try ClosureError.walking(.binds) { () throws(FixupFault) in
                try Self.writeBinds(image.bindRuns, writer: writer, targetValues: targetValues)
            }
        }
    }

    /// Writes one stream of rebase runs, each target inside the image's `vmSize` bytes.
    @inline(__always)
    static func writeRebases(_ runs: ArraySlice<UInt8>, writer: ImageWriter, vmSize: UInt64) throws(FixupFault) {
        var stores = FixupStores(writer: writer, targetValues: [])
        try FixupRunWalk(runs).rebases(within: writer, imageSize: vmSize, into: &stores)
    }

    /// Writes one stream of bind runs, each target index in the table: image fixups and the
    /// Objective-C words (``applyObjCWrites(ofImage:memory:targetValues:closurePath:)``).
    @inline(__always)
    static func writeBinds(_ runs: ArraySlice<UInt8>, writer: ImageWriter, targetValues: [UInt64]) throws(FixupFault) {
        var stores = FixupStores(writer: writer, targetValues: targetValues)
        try FixupRunWalk(runs).binds(within: writer, tableSize: targetValues.count, into: &stores)
    }
}

/// The eager apply's visitor: every fixup stored through the writer, inside the run it accepted.
struct FixupStores: FixupRunVisitor {
    let writer: ImageWriter
    let targetValues: [UInt64]

    @inline(__always)
    func visitRebase(at location: UInt64, target: RebaseTarget, in run: AcceptedRun) {
        writer.store(target.value(imageBase: writer.base), at: location, in: run)
    }

    @inline(__always)
    func visitBind(at location: UInt64, targetIndex: Int, addend: Int64, in run: AcceptedRun) {
        writer.store(targetValues[targetIndex] &+ UInt64(bitPattern: addend), at: location, in: run)
    }
}
