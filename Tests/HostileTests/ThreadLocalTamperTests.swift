import Foundation
@testable import ClosureCache
import LoaderCore
import TestSupport
import Testing
import LaunchPlan
@testable import ClosureFormat

/// Forged thread-local records of the tlv fixture's closure (valid checksum): each would
/// make the fast path write a thunk, a key or the host services table somewhere the images
/// do not allow, and is refused when the closure is read, before anything is mapped.
@Suite(.bounded) struct ThreadLocalTamperTests {
    typealias Forgery = TamperTests.Forgery

    /// The offset of image `index`'s first segment that is not writable (its `__TEXT`).
    static func readOnly(_ c: LaunchClosure, _ index: Int) -> UInt64 {
        c.images[index].plan.segments.first { !$0.isWritable }!.vmOffset
    }

    static let forgeries: [Forgery] = [
        Forgery(description: "descriptor in __TEXT") { c in
            c.threadLocals.setups[0].descriptors[0] = readOnly(c, c.threadLocals.setups[0].image)
        },
        Forgery(description: "descriptor past its image's end") { c in
            c.threadLocals.setups[0].descriptors = [c.images[c.threadLocals.setups[0].image].plan.vmSize]
        },
        Forgery(description: "template larger than its segment") { c in
            c.threadLocals.setups[0].totalSize = c.images[c.threadLocals.setups[0].image].plan.vmSize
        },
        Forgery(description: "more initialized template bytes than template bytes") { c in
            c.threadLocals.setups[0].initialSize = c.threadLocals.setups[0].totalSize + 8
        },
        Forgery(description: "setup for an image out of range") { c in
            c.threadLocals.setups[0].image = c.images.count
        },
        Forgery(description: "two setups for one image") { c in
            c.threadLocals.setups.append(c.threadLocals.setups[0])
        },
        Forgery(description: "host services table in __TEXT") { c in
            let slot = c.threadLocals.hostServices!
            c.threadLocals.hostServices = HostServicesSlot(image: slot.image, vmOffset: readOnly(c, slot.image))
        },
    ]

    @Test(arguments: forgeries)
    func forgeryRefusedWhenRead(_ forgery: Forgery) throws {
        let closure = try FixtureApp.named("tlv").closure()
        #expect(closure.threadLocals.setups.count == 2 && closure.threadLocals.hostServices != nil)
        forgery.expectRefusedWhenRead(closure)
    }

    @Test func unforgedClosureRoundTrips() throws {
        let closure = try FixtureApp.named("tlv").closure()
        #expect(try ClosureFile.decode(ClosureFile.encode(closure), path: "tlv") == closure)
    }
}
