import LoaderCore
import LaunchPlan
import ClosureFormat
import ClosureCache
import LaunchMemory

extension LaunchClosure {
    /// Writes image `index`'s Objective-C words (``ClosureObjC``) from their bind runs, after
    /// every image's own fixups, checked as ``applyFixups(ofImage:memory:targetValues:closurePath:)`` does.
    package func applyObjCWrites(ofImage index: Int, memory: LaunchMemory, targetValues: [UInt64], closurePath: String) throws(ClosureError) {
        guard index < objc.bindRuns.count, !objc.bindRuns[index].isEmpty else { return }
        let writer = memory.writer(image: index)
        try naming(closurePath, image: index) { () throws(ClosureError) in
            try ClosureError.walking(.objcWrites) { () throws(FixupFault) in
                try Self.writeBinds(objc.bindRuns[index], writer: writer, targetValues: targetValues)
            }
        }
    }
}
