import LoaderCore
import LaunchPlan
import ClosureFormat

extension ClosureDump {
    /// The Objective-C part of `dyld3 closure dump`: per image with writes, how many words
    /// the step writes there (selector references and method names rewritten to their
    /// canonical selector; in the runtime, the class and category tables, recognizable by
    /// their absolute words: counts), then the `+load` calls in the order they run.
    public func objcText() throws(ClosureError) -> String {
        let objc = closure.objc
        guard !objc.bindRuns.isEmpty || !objc.loads.isEmpty else { return "objective-c: none\n" }
        var out = "objective-c: \(objc.totalWrites) writes, \(objc.loads.count) +load call\(objc.loads.count == 1 ? "" : "s")\n"
        for index in objc.bindRuns.indices where index < closure.images.count {
            let writes = try closure.objcWrites(ofImage: index, closurePath: path)
            guard !writes.isEmpty else { continue }
            out += "  \(imageLabel(index)): \(writes.count) write\(writes.count == 1 ? "" : "s")"
                + (ClosureDump.holdsRuntimeTables(writes) ? " (class and category tables)" : " (selectors)") + "\n"
        }
        out += "  +load calls:" + (objc.loads.isEmpty ? " none\n" : "\n")
        for call in objc.loads {
            out += "    \(imageLabel(call.image)): method \(location(call.method)), class \(location(call.cls)), selector \(location(call.selector))\n"
        }
        return out
    }

    /// Whether `writes` are the runtime's tables: only they store absolute words (the counts).
    public static func holdsRuntimeTables(_ writes: [ResolvedFixup]) -> Bool {
        writes.contains { if case .bind(.absolute, _) = $0.kind { true } else { false } }
    }

    private func location(_ location: ImageLocation) -> String {
        "\(imageLabel(location.image)) +\(hex(location.offset))"
    }
}
