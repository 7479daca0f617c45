import LoaderCore

extension LaunchClosure {
    /// Writes image `index`'s Objective-C words (``ClosureObjC``) straight from their bind
    /// runs, after every image's own fixups: one bounds check per run, one target check per
    /// word, as ``applyFixups(ofImage:memory:targetValues:closurePath:)`` does.
    public func applyObjCWrites(ofImage index: Int, memory: LaunchMemory, targetValues: [UInt64], closurePath: String) throws(ClosureError) {
        guard index < objc.bindRuns.count, !objc.bindRuns[index].isEmpty else { return }
        let writer = memory.writer(image: index)
        if UnsafeFixupLoop.applyBinds(objc.bindRuns[index], writer: writer, targetValues: targetValues) { return }
        func invalid(_ what: String) -> ClosureError { .invalid(path: closurePath, image: images[index].path, what: "Objective-C writes: \(what)") }
        try Self.reportingInvalid(invalid, "runs") {
            try Self.writeBinds(objc.bindRuns[index], writer: writer, targetValues: targetValues, closurePath: closurePath, invalid: invalid)
        }
    }

    /// Image `index`'s Objective-C writes, decoded (verify, dump, tests).
    public func objcWrites(ofImage index: Int) throws(ClosureError) -> [ResolvedFixup] {
        guard index < objc.bindRuns.count, !objc.bindRuns[index].isEmpty else { return [] }
        return try FixupRuns.decode(rebaseRuns: [0], bindRuns: objc.bindRuns[index], targets: bindTargets, path: images[index].path)
    }
}
