import LoaderCore

extension LaunchClosure {
    /// The value each bind target stands for in this launch's memory, computed once per
    /// launch (targets were checked to lie inside their images when the closure was read).
    public func bindTargetValues(_ memory: LaunchMemory) -> [UInt64] {
        bindTargets.values(bases: memory.images.map(\.base))
    }

    /// Writes image `index`'s rebases, then its binds, straight from their runs: one bounds
    /// check per run, one target check per fixup, no allocation, no strings, no lookups.
    /// ``UnsafeFixupLoop`` applies a well-formed stream; anything it does not accept is
    /// applied again by the checked loop below, which says what is wrong. A run or target
    /// the image does not allow is the closure's fault: `invalid`, naming `closurePath`.
    public func applyFixups(ofImage index: Int, memory: LaunchMemory, targetValues: [UInt64], closurePath: String) throws(ClosureError) {
        try applyFixups(ofImage: index, writer: memory.writer(image: index), targetValues: targetValues, closurePath: closurePath)
    }

    /// ``applyFixups(ofImage:memory:targetValues:closurePath:)`` through image `index`'s
    /// writer, taken from the launch's memory beforehand: what a second thread is given.
    public func applyFixups(ofImage index: Int, writer: ImageWriter, targetValues: [UInt64], closurePath: String) throws(ClosureError) {
        if UnsafeFixupLoop.applyRebases(images[index].rebaseRuns, writer: writer, vmSize: images[index].plan.vmSize),
           UnsafeFixupLoop.applyBinds(images[index].bindRuns, writer: writer, targetValues: targetValues) {
            return
        }
        try applyFixupsChecked(ofImage: index, writer: writer, targetValues: targetValues, closurePath: closurePath)
    }

    /// The checked loop: every stream decoded through ``FixupRunCursor``, every failure
    /// named (offset and what). Applies whatever ``UnsafeFixupLoop`` did not accept.
    func applyFixupsChecked(ofImage index: Int, writer: ImageWriter, targetValues: [UInt64], closurePath: String) throws(ClosureError) {
        let base = writer.base
        let vmSize = images[index].plan.vmSize
        func invalid(_ what: String) -> ClosureError { .invalid(path: closurePath, image: images[index].path, what: what) }
        try Self.reportingInvalid(invalid, "fixup runs") {
            var rebases = try FixupRunCursor(images[index].rebaseRuns, path: closurePath)
            var target: UInt64 = 0
            while let run = try rebases.nextRun() {
                try writer.checkRun(start: run.start, last: run.last)
                var address = base &+ run.start
                for _ in 0..<run.count {
                    target = try rebases.nextRebaseTarget(after: target)
                    let offset = target & 0x00ff_ffff_ffff_ffff
                    guard offset < vmSize else { throw invalid("rebase target 0x\(String(offset, radix: 16)) is outside the image") }
                    writer.storeInCheckedRun((base &+ offset) | (target & 0xff00_0000_0000_0000), at: address)
                    address &+= run.stride
                }
            }
            try rebases.finish()
            try Self.writeBinds(images[index].bindRuns, writer: writer, targetValues: targetValues, closurePath: closurePath, invalid: invalid)
        }
    }

    /// Writes one stream of bind runs through `writer`: each run checked before its first
    /// store, each target index against the table. Image fixups and the Objective-C words
    /// (``applyObjCWrites(ofImage:memory:targetValues:closurePath:)``) both go through it.
    /// Called inside ``reportingInvalid(_:_:_:)``, which turns a corrupt stream or a run
    /// outside the image into `invalid`.
    static func writeBinds(_ runs: ArraySlice<UInt8>, writer: ImageWriter, targetValues: [UInt64], closurePath: String,
                           invalid: (String) -> ClosureError) throws {
        var binds = try FixupRunCursor(runs, path: closurePath)
        let targetCount = UInt64(targetValues.count)
        while let run = try binds.nextRun() {
            try writer.checkRun(start: run.start, last: run.last)
            var address = writer.base &+ run.start
            for _ in 0..<run.count {
                let (targetIndex, addend) = try binds.nextBind()
                guard targetIndex < targetCount else { throw invalid("bind target index \(targetIndex) is past the table") }
                writer.storeInCheckedRun(targetValues[Int(targetIndex)] &+ UInt64(bitPattern: addend), at: address)
                address &+= run.stride
            }
        }
        try binds.finish()
    }

    /// Runs `body`, turning what it throws into `invalid`: a corrupt stream names its offset
    /// in `what` ("fixup runs are corrupt at offset ..."), a run outside the image its reason.
    static func reportingInvalid(_ invalid: (String) -> ClosureError, _ what: String, _ body: () throws -> Void) throws(ClosureError) {
        do {
            try body()
        } catch let error as ClosureError {
            guard case let .corrupt(_, offset, reason) = error else { throw error }
            throw invalid("\(what) are corrupt at offset 0x\(String(offset, radix: 16)): \(reason)")
        } catch let error as LoadError {
            guard case let .mapping(_, reason) = error else { throw invalid(error.description) }
            throw invalid(reason)
        } catch {
            throw invalid("\(error)")
        }
    }
}
