import Foundation
@testable import LaunchClosure
import LoaderCore
import TestSupport
import Testing

/// Forged Objective-C parts of the objc fixture's closure (valid checksum): each is refused
/// when the closure is read, before anything is mapped or written.
@Suite struct ObjCTamperTests {
    struct Forgery: CustomStringConvertible, Sendable {
        let description: String
        let forge: @Sendable (inout LaunchClosure) -> Void
    }

    static let forgeries: [Forgery] = [
        Forgery(description: "+load method outside every executable segment") { c in
            let call = c.objc.loads[0]
            let data = c.images[call.method.image].plan.segments.first { !$0.protection.contains(.execute) }!.vmOffset
            c.objc.loads[0] = ObjCLoadCall(image: call.image, method: ImageLocation(image: call.method.image, offset: data),
                                           cls: call.cls, selector: call.selector)
        },
        Forgery(description: "+load class in an image out of range") { c in
            let call = c.objc.loads[0]
            c.objc.loads[0] = ObjCLoadCall(image: call.image, method: call.method,
                                           cls: ImageLocation(image: c.images.count, offset: 0), selector: call.selector)
        },
        Forgery(description: "+load selector past its image's end") { c in
            let call = c.objc.loads[0]
            c.objc.loads[0] = ObjCLoadCall(image: call.image, method: call.method, cls: call.cls,
                                           selector: ImageLocation(image: 0, offset: c.images[0].plan.vmSize))
        },
        Forgery(description: "Objective-C runs for fewer images than the closure has") { c in
            c.objc.bindRuns.removeLast()
            c.objc.bindCounts.removeLast()
        },
    ]

    @Test(arguments: forgeries)
    func forgeryRefusedWhenRead(_ forgery: Forgery) throws {
        var closure = try FixtureApp.named("objc").closure()
        #expect(!closure.objc.loads.isEmpty)
        forgery.forge(&closure)
        let file = ClosureFile.encode(closure)
        #expect(throws: ClosureError.self, "\(forgery)") { try ClosureFile.decode(file, path: "forged") }
    }

    @Test func unforgedClosureRoundTrips() throws {
        let closure = try FixtureApp.named("objc").closure()
        #expect(try ClosureFile.decode(ClosureFile.encode(closure), path: "objc") == closure)
    }
}
