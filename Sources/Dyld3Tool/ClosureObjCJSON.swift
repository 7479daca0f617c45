import ClosureCache
import MachOInspect
import ClosureFormat
import LaunchPlan

extension ClosureJSON {
    /// The `objc` member of `closure dump --json`: null without an Objective-C step; else
    /// per image with writes its index, write count and whether they are the runtime's
    /// tables, and the `+load` calls in the order they run.
    static func objc(_ closure: LaunchClosure, closurePath: String) throws(ClosureError) -> JSONValue {
        let objc = closure.objc
        guard !objc.bindRuns.isEmpty || !objc.loads.isEmpty else { return .null }
        var images: [JSONValue] = []
        for index in objc.bindRuns.indices where index < closure.images.count {
            let writes = try closure.objcWrites(ofImage: index, closurePath: closurePath)
            guard !writes.isEmpty else { continue }
            images.append(.object([
                ("image", .int(Int64(index))),
                ("writes", .int(Int64(writes.count))),
                ("runtime_tables", .bool(ClosureDump.holdsRuntimeTables(writes))),
            ]))
        }
        func location(_ location: ImageLocation) -> JSONValue {
            .object([("image", .int(Int64(location.image))), ("offset", .uint(location.offset))])
        }
        return .object([
            ("writes", .int(Int64(objc.totalWrites))),
            ("images", .array(images)),
            ("loads", .array(objc.loads.map { call in
                .object([("image", .int(Int64(call.image))), ("method", location(call.method)),
                         ("class", location(call.cls)), ("selector", location(call.selector))])
            })),
        ])
    }
}
