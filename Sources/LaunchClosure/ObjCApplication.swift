import LoaderCore

extension LaunchClosure {
    /// Writes image `index`'s Objective-C words (``ClosureObjC``) straight from their bind
    /// runs, after every image's own fixups: one bounds check per run, one target check per
    /// word, as ``applyFixups(ofImage:memory:targetValues:closurePath:)`` does.
    public func applyObjCWrites(ofImage index: Int, memory: LaunchMemory, targetValues: [UInt64], closurePath: String) throws(ClosureError) {
        guard index < objc.bindRuns.count, !objc.bindRuns[index].isEmpty else { return }
        let image = images[index]
        let base = memory.images[index].base
        func invalid(_ what: String) -> ClosureError { .invalid(path: closurePath, image: image.path, what: "Objective-C writes: \(what)") }
        do {
            var binds = try FixupRunCursor(objc.bindRuns[index], path: image.path)
            let targetCount = UInt64(targetValues.count)
            while let run = try binds.nextRun() {
                _ = try memory.checkRun(image: index, start: run.start, count: run.count, stride: run.stride)
                var address = base &+ run.start
                for _ in 0..<run.count {
                    let (targetIndex, addend) = try binds.nextBind()
                    guard targetIndex < targetCount else { throw invalid("bind target index \(targetIndex) is past the table") }
                    memory.storeInCheckedRun(targetValues[Int(targetIndex)] &+ UInt64(bitPattern: addend), at: address)
                    address &+= run.stride
                }
            }
            try binds.finish()
        } catch let error as ClosureError {
            guard case let .corrupt(_, offset, what) = error else { throw error }
            throw invalid("runs are corrupt at offset 0x\(String(offset, radix: 16)): \(what)")
        } catch let error as LoadError {
            guard case let .mapping(_, reason) = error else { throw invalid(error.description) }
            throw invalid(reason)
        } catch {
            throw invalid("\(error)")
        }
    }

    /// Image `index`'s Objective-C writes, decoded (verify, dump, tests).
    public func objcWrites(ofImage index: Int) throws(ClosureError) -> [ResolvedFixup] {
        guard index < objc.bindRuns.count, !objc.bindRuns[index].isEmpty else { return [] }
        return try FixupRuns.decode(rebaseRuns: [0], bindRuns: objc.bindRuns[index], targets: bindTargets, path: images[index].path)
    }
}
