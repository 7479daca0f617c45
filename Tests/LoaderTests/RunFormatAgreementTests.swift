@testable import Dyld3
import Foundation
@testable import ClosureCache
import LoaderCore
import TestSupport
import Testing
import LaunchPlan
@testable import ClosureFormat
import LaunchMemory
import RuntimeServices

/// Every consumer of the fixup-run format walks one closure and they must agree: the
/// encoder's page index and the one walked back from the runs, each page's fixups decoded
/// from its restart point and the whole-stream decode, the eager apply's stores and the
/// page-in handler's fills (word for word against the values the decoded fixups call for),
/// verification, and the page-in launch's check.
@Suite(.serialized, .bounded) struct RunFormatAgreementTests {
    static let launchable = SlowPathTests.apps.filter(\.launches)

    @Test(arguments: launchable)
    func everyConsumerOfTheRunsAgrees(_ app: FixtureApp) throws {
        let closure = try app.closure()
        #expect(closure.consistencyProblems().isEmpty, "\(app)")
        for index in closure.images.indices { try closure.checkFixups(ofImage: index) }
        let slide = PageInTests.randomSlide()

        // Decode, page index, per-page decode.
        var decoded: [[ResolvedFixup]] = []
        for index in closure.images.indices {
            let image = closure.images[index]
            let all = try closure.fixups(ofImage: index)
            #expect(all.count == image.rebaseCount + image.bindCount, "\(app) \(image.path)")
            decoded.append(all)
            let walked = try FixupPageIndex.derive(rebaseRuns: image.rebaseRuns, bindRuns: image.bindRuns)
            #expect(walked == image.fixupPageIndex, "\(app) \(image.path): the encoder's index and the walked one differ")
            let (pageSize, pages) = try image.fixupPageIndex.pages(path: image.path)
            var onPages = 0
            for page in pages {
                let alone = try closure.fixups(ofImage: index, page: page)
                #expect(alone == all.filter { $0.vmOffset / pageSize == page.page }, "\(app) \(image.path) page \(page.page)")
                onPages += alone.count
            }
            #expect(pageSize == 0 || onPages == all.count, "\(app) \(image.path)")
        }

        // The eager apply and the page-in handler, each into its own mapping at its own
        // slide: the words the decoded fixups call for, and the same memory once pointers are
        // taken relative to each region (the launch digest).
        let plans = closure.images.map(\.plan)
        let eager = try LaunchMemory(plans: plans, firstSlide: nil)
        defer { eager.release() }
        let eagerValues = closure.bindTargetValues(eager)
        for index in closure.images.indices {
            try closure.applyFixups(ofImage: index, memory: eager, targetValues: eagerValues, closurePath: "agreement")
        }
        try Self.expectDecodedValues(decoded, in: eager, "\(app) eager apply")

        // The page-in launch writes its Objective-C words after the fixups: so do the others.
        for index in closure.objc.bindRuns.indices {
            try closure.applyObjCWrites(ofImage: index, memory: eager, targetValues: eagerValues, closurePath: "agreement")
        }
        // And its thread-local descriptors and host services table (keys below).
        try ThreadLocals.apply(closure.threadLocals.setups, hostServices: closure.threadLocals.hostServices, memory: eager)
        let request = LaunchOptions(roots: [app.executable], arch: app.arch, root: app.root, slide: slide, run: false, fixups: .pageIn)
        let launch = try FastPath.launch(closure, closurePath: "agreement", request: request)
        defer { launch.memory.release() }
        PageInTests.expectPageInOrFallback(launch.report.fixupsMode, launch.report.pageInFallback?.description, "\(app)")
        // A thread-local descriptor's thunk is written over after its fixup; its key is the
        // launch's own (three launches are live here, each with keys of its own).
        let descriptors = closure.threadLocals.setups.flatMap { setup in setup.descriptors.map { (setup.image, $0) } }
        if closure.objc.bindRuns.isEmpty {
            try Self.expectDecodedValues(decoded, in: launch.memory, "\(app) page-in fills", except: Set(descriptors.map { "\($0.0):\($0.1)" }))
        }
        for (image, descriptor) in descriptors {
            let key = try launch.memory.load(image: image, vmOffset: descriptor + 8)
            try eager.store(key, image: image, vmOffset: descriptor + 8)
        }
        let objcWrites = try closure.images.indices.map { closure.objc.bindRuns.isEmpty ? [] : try closure.objcWrites(ofImage: $0) }
        let later = LaunchDigest.laterWrites(objc: objcWrites, threadLocals: closure.threadLocals.setups, imageCount: closure.images.count)
        let pointers = LaunchDigest.slideDependentLocations(decoded, then: later)
        let pageIn = launch.memory.writableDigest(slideDependent: pointers)
        #expect(pageIn == eager.writableDigest(slideDependent: pointers), "\(app): the page-in fills differ from the eager apply's stores")
    }

    /// Every location of `decoded` (per image) holds the value its last fixup calls for at
    /// `memory`'s bases.
    static func expectDecodedValues(_ decoded: [[ResolvedFixup]], in memory: LaunchMemory, _ context: String,
                                    except skipped: Set<String> = []) throws {
        let bases = memory.images.map(\.base)
        for index in decoded.indices {
            var expected: [UInt64: UInt64] = [:]
            for fixup in decoded[index] where !skipped.contains("\(index):\(fixup.vmOffset)") {
                expected[fixup.vmOffset] = fixup.value(imageBase: bases[index], imageBases: bases)
            }
            for (vmOffset, value) in expected.sorted(by: { $0.key < $1.key }) {
                let found = try memory.load(image: index, vmOffset: vmOffset)
                #expect(found == value, "\(context): image \(index) +0x\(String(vmOffset, radix: 16))")
                if found != value { return }
            }
        }
    }
}
