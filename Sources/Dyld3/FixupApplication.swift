import LoaderCore
import LaunchPlan
import ClosureFormat
import LaunchClosure

extension LaunchClosure {
    /// The value each bind target stands for in this launch's memory, computed once per
    /// launch (targets were checked to lie inside their images when the closure was read).
    public func bindTargetValues(_ memory: LaunchMemory) -> [UInt64] {
        bindTargets.values(bases: memory.images.map(\.base))
    }

    /// Writes image `index`'s rebases, then its binds, straight from their runs: one bounds
    /// check per run, one target check per fixup, no allocation, no strings, no lookups.
    /// ``UnsafeFixupLoop`` applies a well-formed stream; anything it does not accept is
    /// applied again by the checked walk (``applyFixupsChecked(ofImage:writer:targetValues:closurePath:)``),
    /// which says what is wrong. A run or target the image does not allow is the closure's
    /// fault, named with `closurePath`.
    public func applyFixups(ofImage index: Int, memory: LaunchMemory, targetValues: [UInt64], closurePath: String) throws(ClosureError) {
        try applyFixups(ofImage: index, writer: memory.writer(image: index), targetValues: targetValues, closurePath: closurePath)
    }

    /// ``applyFixups(ofImage:memory:targetValues:closurePath:)`` through image `index`'s
    /// writer, taken from the launch's memory beforehand: what a second thread is given.
    package func applyFixups(ofImage index: Int, writer: ImageWriter, targetValues: [UInt64], closurePath: String) throws(ClosureError) {
        if UnsafeFixupLoop.applyRebases(images[index].rebaseRuns, writer: writer, vmSize: images[index].plan.vmSize),
           UnsafeFixupLoop.applyBinds(images[index].bindRuns, writer: writer, targetValues: targetValues) {
            return
        }
        try applyFixupsChecked(ofImage: index, writer: writer, targetValues: targetValues, closurePath: closurePath)
    }

    /// The checked loop: both streams walked through ``FixupRunWalk``, each run accepted by
    /// the writer before its first store, every failure a ``FixupFault``. Applies whatever
    /// ``UnsafeFixupLoop`` did not accept.
    func applyFixupsChecked(ofImage index: Int, writer: ImageWriter, targetValues: [UInt64], closurePath: String) throws(ClosureError) {
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

    /// Writes one stream of rebase runs through `writer`: each run accepted before its first
    /// store, each target checked to lie inside the image's `vmSize` bytes.
    static func writeRebases(_ runs: ArraySlice<UInt8>, writer: ImageWriter, vmSize: UInt64) throws(FixupFault) {
        var accepted: AcceptedRun?
        try FixupRunWalk(runs).forEachRebase { (run, _) throws(FixupFault) in
            accepted = writer.accept(run)
            if accepted == nil { throw writer.fault(run) }
        } _: { (location, target) throws(FixupFault) in
            guard target.offset < vmSize else { throw .rebaseTargetOutsideImage(target: target.offset) }
            writer.store(target.value(imageBase: writer.base), at: location, in: accepted!)
        }
    }

    /// Writes one stream of bind runs through `writer`: each run accepted before its first
    /// store, each target index checked against the table. Image fixups and the
    /// Objective-C words (``applyObjCWrites(ofImage:memory:targetValues:closurePath:)``)
    /// both go through it.
    static func writeBinds(_ runs: ArraySlice<UInt8>, writer: ImageWriter, targetValues: [UInt64]) throws(FixupFault) {
        var accepted: AcceptedRun?
        try FixupRunWalk(runs).forEachBind { (run, _) throws(FixupFault) in
            accepted = writer.accept(run)
            if accepted == nil { throw writer.fault(run) }
        } _: { (location, targetIndex, addend) throws(FixupFault) in
            guard targetIndex < UInt64(targetValues.count) else {
                throw .bindTargetPastTable(index: targetIndex, tableSize: targetValues.count)
            }
            writer.store(targetValues[Int(targetIndex)] &+ UInt64(bitPattern: addend), at: location, in: accepted!)
        }
    }
}
