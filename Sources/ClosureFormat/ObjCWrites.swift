import LaunchPlan

extension LaunchClosure {
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
