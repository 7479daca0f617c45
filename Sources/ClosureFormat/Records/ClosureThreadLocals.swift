import LaunchPlan

/// The thread-local-variable step and the host services table, as a closure records them
/// (docs/closure-format.md, "Thread-local variables"), so the fast path only writes.
///
/// Encoding: setup count, then per setup `image`, `templateOffset`, `initialSize`,
/// `totalSize` ULEBs, descriptor count, each descriptor's offset as the ULEB distance from
/// the previous one (the first from 0); then a byte (1 when there is a host services table)
/// and its `image` and `vmOffset` ULEBs.
package struct ClosureThreadLocals: Equatable, Sendable {
    package var setups: [ThreadLocalSetup]
    package var hostServices: HostServicesSlot?

    package static let none = ClosureThreadLocals(setups: [], hostServices: nil)

    package init(setups: [ThreadLocalSetup], hostServices: HostServicesSlot?) {
        (self.setups, self.hostServices) = (setups, hostServices)
    }

    /// Reads and checks the records: every image in range and named once, every template,
    /// descriptor and the table inside one writable segment, descriptors increasing.
    init(parsing r: inout ClosureReader, images: [ClosureImage]) throws(ClosureError) {
        var seen = Set<Int>()
        setups = try r.list(of: "thread-local setup", minimumSize: 5) { (r) throws(ClosureError) in
            let start = r.position
            let image = try r.int("thread-local image")
            guard image < images.count, seen.insert(image).inserted else {
                throw r.corrupt("thread-local setup names image \(image), out of range or twice", at: start)
            }
            let plan = images[image].plan
            let templateOffset = try r.uleb(), initialSize = try r.uleb(), totalSize = try r.uleb()
            guard initialSize <= totalSize, totalSize == 0 || plan.isWritable(offset: templateOffset, size: totalSize) else {
                throw r.corrupt("thread-local template of \(images[image].path) is not inside one writable segment", at: start)
            }
            var descriptors: [UInt64] = []
            var previous: UInt64 = 0
            for number in 0..<(try r.count(of: "thread-local descriptor")) {
                let (offset, overflow) = previous.addingReportingOverflow(try r.uleb())
                guard !overflow, number == 0 || offset > previous,
                      plan.isWritable(offset: offset, size: ThreadLocalSetup.descriptorSize) else {
                    throw r.corrupt("thread-local descriptor of \(images[image].path) is not inside one writable segment, or out of order")
                }
                descriptors.append(offset)
                previous = offset
            }
            return ThreadLocalSetup(image: image, templateOffset: templateOffset, initialSize: initialSize,
                                    totalSize: totalSize, descriptors: descriptors)
        }
        hostServices = nil
        if try r.u8() != 0 {
            let start = r.position
            let image = try r.int("host services image")
            let offset = try r.uleb()
            guard image < images.count, images[image].plan.isWritable(offset: offset, size: HostServicesSlot.size) else {
                throw r.corrupt("host services table is not inside one writable segment of its image", at: start)
            }
            hostServices = HostServicesSlot(image: image, vmOffset: offset)
        }
    }

    func encode(into w: inout ClosureWriter) {
        w.list(setups) { w, setup in
            for value in [UInt64(setup.image), setup.templateOffset, setup.initialSize, setup.totalSize, UInt64(setup.descriptors.count)] {
                w.uleb(value)
            }
            var previous: UInt64 = 0
            for offset in setup.descriptors {
                w.uleb(offset - previous)
                previous = offset
            }
        }
        if let hostServices {
            w.u8(1)
            w.uleb(hostServices.image)
            w.uleb(hostServices.vmOffset)
        } else {
            w.u8(0)
        }
    }
}
