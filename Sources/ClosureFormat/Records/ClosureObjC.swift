import LaunchPlan
import MachOReader

/// The Objective-C step, precomputed (docs/objc.md): per image, the words the step writes
/// (canonical selectors, the runtime's class, category and hash tables) as bind runs over the
/// shared bind-target table, applied after every image's own fixups; and the `+load` calls in
/// the order they run. The fast path hashes no name and reads no Objective-C metadata.
///
/// Encoding: image count ULEB (0: no Objective-C step, else the closure's image count),
/// per image its bind-run count ULEB and bind-run blob; then the `+load` count ULEB and per
/// call seven ULEBs: image, method image and offset, class image and offset, selector image
/// and offset.
package struct ClosureObjC: Equatable, Sendable {
    /// Per image (empty without an Objective-C step): its writes' bind runs.
    package var bindRuns: [ArraySlice<UInt8>]
    /// Per image: how many words its runs write.
    package var bindCounts: [Int]
    /// `+load` calls in the order they run.
    package var loads: [ObjCLoadCall]

    /// No Objective-C step.
    package static let none = ClosureObjC(bindRuns: [], bindCounts: [], loads: [])

    package var totalWrites: Int { bindCounts.reduce(0, +) }
}

extension ClosureObjC {
    /// Two ULEBs per image, seven per call.
    static let minimumLoadSize = 7

    init(parsing r: inout ClosureReader, images: [ClosureImage]) throws(ClosureError) {
        let imageCount = try r.count(of: "Objective-C image", minimumSize: 2)
        guard imageCount == 0 || imageCount == images.count else {
            throw r.corrupt("Objective-C runs for \(imageCount) images, the closure has \(images.count)")
        }
        bindRuns = []
        bindCounts = []
        for _ in 0..<imageCount {
            bindCounts.append(try r.int("Objective-C write count"))
            bindRuns.append(try r.blob())
        }
        loads = try r.list(of: "+load call", minimumSize: Self.minimumLoadSize) { (r) throws(ClosureError) in
            let image = try r.int("+load image")
            func location(_ what: String) throws(ClosureError) -> ImageLocation {
                let index = try r.int("\(what) image")
                let offset = try r.uleb()
                guard index < images.count, offset < images[index].plan.vmSize else {
                    throw r.corrupt("+load \(what) at image \(index) offset \(hex(offset)) is outside every image")
                }
                return ImageLocation(image: index, offset: offset)
            }
            let method = try location("method")
            let cls = try location("class")
            let selector = try location("selector")
            guard image < images.count, images[method.image].plan.isExecutable(method.offset) else {
                throw r.corrupt("+load method at image \(method.image) offset \(hex(method.offset)) is not in an executable segment")
            }
            return ObjCLoadCall(image: image, method: method, cls: cls, selector: selector)
        }
    }

    func encode(into w: inout ClosureWriter) {
        w.uleb(bindRuns.count)
        for (runs, count) in zip(bindRuns, bindCounts) {
            w.uleb(count)
            w.blob(runs)
        }
        w.list(loads) { w, call in
            w.uleb(call.image)
            for location in [call.method, call.cls, call.selector] {
                w.uleb(location.image)
                w.uleb(location.offset)
            }
        }
    }
}
