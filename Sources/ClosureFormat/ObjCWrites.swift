import LaunchPlan

extension LaunchClosure {
    /// Image `index`'s Objective-C writes, decoded (verify, dump, tests).
    package func objcWrites(ofImage index: Int) throws(ClosureError) -> [ResolvedFixup] {
        guard index < objc.bindRuns.count, !objc.bindRuns[index].isEmpty else { return [] }
        return try ClosureError.walking(.objcWrites) { () throws(FixupFault) in
            try FixupRuns.decodeBinds(FixupRunWalk(objc.bindRuns[index]), targets: bindTargets)
        }
    }

    /// ``objcWrites(ofImage:)``, a fault named with the closure's path.
    package func objcWrites(ofImage index: Int, closurePath: String) throws(ClosureError) -> [ResolvedFixup] {
        try naming(closurePath, image: index) { () throws(ClosureError) in try objcWrites(ofImage: index) }
    }
}
