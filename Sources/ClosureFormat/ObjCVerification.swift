import LaunchPlan
import MachOReader

extension LaunchClosure {
    /// What is wrong with the Objective-C part of a closure the reader accepted, checked like the
    /// images' fixups: runs holding as many writes as the counts say, each 8 bytes inside a
    /// writable segment; each `+load` call's class and selector inside a segment of their image,
    /// the calls in initializer order.
    package func objcProblems() -> [String] {
        var problems: [String] = []
        for index in objc.bindRuns.indices where index < images.count {
            let image = images[index]
            // Walked as a stream, as the images' fixups are (``consistencyProblems()``).
            let writable = WritableRanges(image.plan)
            let tableSize = bindTargets.count
            var count = 0, bad = LimitedProblems(), outside = OutsideWriteCheck(writable)
            do throws(ClosureError) {
                try ClosureError.walking(.objcWrites) { () throws(FixupFault) in
                    guard !objc.bindRuns[index].isEmpty else { return }
                    try FixupRunWalk(objc.bindRuns[index]).forEachBind(tableSize: tableSize) { (run, _) throws(FixupFault) in
                        try outside.enter(run)
                    } _: { (location, _, _) throws(FixupFault) in
                        count += 1
                        if outside.isBad(location) {
                            bad.note("\(image.path): Objective-C write at \(hex(location)) is not 8 bytes inside a writable segment")
                        }
                    }
                }
            } catch {
                problems.append("\(image.path): Objective-C runs do not decode: \(error)")
                continue
            }
            if index < objc.bindCounts.count, count != objc.bindCounts[index] {
                problems.append("\(image.path): Objective-C runs hold \(count) writes, the count says \(objc.bindCounts[index])")
            }
            problems += bad.all { "\(image.path): \($0) more bad Objective-C writes" }
        }
        let position = Dictionary(initializerOrder.enumerated().map { ($1, $0) }, uniquingKeysWith: min)
        var lastPosition = -1
        for (number, call) in objc.loads.enumerated() {
            // A class object lives in writable data (the runtime writes it); a selector is a readable string.
            for (what, location, writable) in [("class", call.cls, true), ("selector", call.selector, false)] {
                guard images.indices.contains(location.image) else {
                    problems.append("+load call \(number): \(what) in image \(location.image) of \(images.count)")
                    continue
                }
                let segments = images[location.image].plan.segments.filter { writable ? $0.isWritable : $0.protection.contains(.read) }
                if !segments.contains(where: { $0.contains(location.offset) }) {
                    problems.append("+load call \(number): \(what) at \(hex(location.offset)) is in no \(writable ? "writable" : "readable") segment of \(images[location.image].path)")
                }
            }
            guard let current = position[call.image] else {
                problems.append("+load call \(number): image \(call.image) is not in the initializer order")
                continue
            }
            if current < lastPosition {
                problems.append("+load call \(number) (image \(call.image)) runs after a later image's calls: not in initializer order")
            }
            lastPosition = max(lastPosition, current)
        }
        return problems
    }
}
