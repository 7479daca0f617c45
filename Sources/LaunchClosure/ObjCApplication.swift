import LoaderCore

extension LaunchClosure {
    /// Writes image `index`'s Objective-C words (``ClosureObjC``) straight from their bind
    /// runs, after every image's own fixups: one bounds check per run, one target check per
    /// word, as ``applyFixups(ofImage:memory:targetValues:closurePath:)`` does.
    public func applyObjCWrites(ofImage index: Int, memory: LaunchMemory, targetValues: [UInt64], closurePath: String) throws(ClosureError) {
        guard index < objc.bindRuns.count, !objc.bindRuns[index].isEmpty else { return }
        let writer = memory.writer(image: index)
        if UnsafeFixupLoop.applyBinds(objc.bindRuns[index], writer: writer, targetValues: targetValues) { return }
        do throws(FixupFault) {
            try Self.writeBinds(objc.bindRuns[index], writer: writer, targetValues: targetValues)
        } catch {
            throw .fixups(path: closurePath, image: images[index].path, stream: .objcWrites, fault: error)
        }
    }

    /// Image `index`'s Objective-C writes, decoded (verify, dump, tests).
    public func objcWrites(ofImage index: Int) throws(FixupStreamFault) -> [ResolvedFixup] {
        guard index < objc.bindRuns.count, !objc.bindRuns[index].isEmpty else { return [] }
        do throws(FixupFault) {
            return try FixupRuns.decodeBinds(FixupRunWalk(objc.bindRuns[index]), targets: bindTargets)
        } catch {
            throw FixupStreamFault(.objcWrites, error)
        }
    }

    /// ``objcWrites(ofImage:)``, a fault named with the closure's path.
    public func objcWrites(ofImage index: Int, closurePath: String) throws(ClosureError) -> [ResolvedFixup] {
        do throws(FixupStreamFault) {
            return try objcWrites(ofImage: index)
        } catch {
            throw .fixups(path: closurePath, image: images[index].path, stream: error.stream, fault: error.fault)
        }
    }
}
