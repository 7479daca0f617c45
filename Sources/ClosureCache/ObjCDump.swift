import LoaderCore
import LaunchPlan
import ClosureFormat
import MachOReader

extension ClosureDump {
    /// The Objective-C part of `dyld3 closure dump`: per image with writes, how many words the
    /// step writes (selectors and protocols; or the runtime's tables, recognizable by their
    /// absolute words), then the `+load` calls in the order they run.
    package func objcText() throws(ClosureError) -> String {
        let objc = closure.objc
        guard !objc.bindRuns.isEmpty || !objc.loads.isEmpty else { return "objective-c: none\n" }
        var out = "objective-c: \(objc.totalWrites) writes, \(objc.loads.count) +load call\(objc.loads.count == 1 ? "" : "s")\n"
        for index in objc.bindRuns.indices where index < closure.images.count {
            let (count, runtimeTables) = try objcSummary(ofImage: index)
            guard count > 0 else { continue }
            out += "  \(imageLabel(index)): \(count) write\(count == 1 ? "" : "s")"
                + (runtimeTables ? " (runtime tables)" : " (selectors and protocols)") + "\n"
        }
        out += "  +load calls:" + (objc.loads.isEmpty ? " none\n" : "\n")
        for call in objc.loads {
            out += "    \(imageLabel(call.image)): method \(location(call.method)), class \(location(call.cls)), selector \(location(call.selector))\n"
        }
        return out
    }

    /// How many Objective-C writes image `index` has and whether they are the runtime's tables,
    /// counted as its runs are walked.
    func objcSummary(ofImage index: Int) throws(ClosureError) -> (count: Int, runtimeTables: Bool) {
        guard index < closure.objc.bindRuns.count, !closure.objc.bindRuns[index].isEmpty else { return (0, false) }
        let targets = closure.bindTargets
        var count = 0, runtimeTables = false
        try closure.naming(path, image: index) { () throws(ClosureError) in
            try ClosureError.walking(.objcWrites) { () throws(FixupFault) in
                try FixupRunWalk(closure.objc.bindRuns[index]).forEachBind(tableSize: targets.count) { (_, targetIndex, _) throws(FixupFault) in
                    count += 1
                    if case .absolute = targets[targetIndex] { runtimeTables = true }
                }
            }
        }
        return (count, runtimeTables)
    }

    /// Whether `writes` are the runtime's tables: only they store absolute words (the counts).
    package static func holdsRuntimeTables(_ writes: [ResolvedFixup]) -> Bool {
        writes.contains { if case .bind(.absolute, _) = $0.kind { true } else { false } }
    }

    private func location(_ location: ImageLocation) -> String {
        "\(imageLabel(location.image)) +\(hex(location.offset))"
    }
}
