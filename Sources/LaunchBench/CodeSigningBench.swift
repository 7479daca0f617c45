import Dyld3
import Foundation
import LaunchPlan
import LoaderCore
import MachOReader
import ClosureFormat
import LoaderSystem

/// What code-signature verification costs at one app size (docs/code-signing.md, "What
/// it costs"): each check measured on its own, over every signed image of the app, in
/// rounds interleaved with the eager dyld3 launch with and without `--verify-pages`.
package struct CodeSigningCost: Codable, Sendable {
    /// Images carrying a signature, the code slots of their best CodeDirectories, and the
    /// bytes those slots cover (each image's code limit).
    package var signedImages: Int, signedPages: Int, signedBytes: Int
    /// dyld2's check (and install's): `CodeSigning.verify` of every image, the files
    /// mapped beforehand (every page hash of every CodeDirectory, the special slots).
    package var fullVerification: Distribution
    package var fullVerificationNsPerPage: Double, fullVerificationNsPerMb: Double
    /// The fast path's identity check: every signed image's CodeDirectory read through an
    /// open descriptor and hashed, compared with a recorded cdHash.
    package var cdhashCheck: Distribution
    /// cdhashCheck's median over the warm eager dyld3 launch's median: the check's serial
    /// cost, as if one thread made it (the launch identifies most images on its helper).
    package var cdhashShareOfDyld3: Double
    /// Eager dyld3 launches with the cdHash check switched off (bench only), interleaved
    /// with ``dyld3Eager``: what the check costs the launch, and its share (the 5% target).
    package var dyld3WithoutCdhash: Distribution
    package var cdhashLaunchCostNs: Int64, cdhashLaunchShare: Double
    /// The hash of one code page against its slot, as page-in's fault path makes it for
    /// each page it fills: every signed page hashed where it lies, per page and per MB.
    package var pageCheckNsPerPage: Double, pageCheckNsPerMb: Double
    /// Eager dyld3 launches (no code run), without and with `--verify-pages`, interleaved;
    /// the pages the latter checked, and its own timed share (the `parsing` phase) per page.
    package var dyld3Eager: Distribution, dyld3VerifyPages: Distribution
    package var verifyPagesChecked: Int
    package var verifyPagesPhase: Distribution
    package var verifyPagesNsPerPage: Double, verifyPagesNsPerMb: Double

    /// Keys holding times carry `Ns` (`_ns` once snake-cased).
    enum CodingKeys: String, CodingKey {
        case signedImages, signedPages, signedBytes
        case fullVerification = "fullVerificationNs", fullVerificationNsPerPage, fullVerificationNsPerMb
        case cdhashCheck = "cdhashCheckNs", cdhashShareOfDyld3, dyld3WithoutCdhash = "dyld3WithoutCdhashNs", cdhashLaunchCostNs, cdhashLaunchShare
        case pageCheckNsPerPage, pageCheckNsPerMb
        case dyld3Eager = "dyld3EagerNs", dyld3VerifyPages = "dyld3VerifyPagesNs", verifyPagesChecked, verifyPagesPhase = "verifyPagesPhaseNs"
        case verifyPagesNsPerPage, verifyPagesNsPerMb
    }
}

enum CodeSigningBench {
    static func measure(_ closure: LaunchClosure, closurePath: String, options: LaunchOptions, runs: Int, dyld3Median: Int64) throws -> CodeSigningCost {
        struct Signed {
            let path: String, file: ImageFile, directory: CS_CodeDirectory, descriptor: ImageDescriptor, signature: SignedImage
        }
        var signed: [Signed] = []
        for image in closure.images {
            guard let signature = image.identity.signature else { continue }
            let file = try ImageFile.load(path: image.path, arch: options.arch)
            guard let read = try CodeSignature.read(from: file.image) else {
                throw CommandFailure.failed("\(image.path): the closure records a signature the file does not have")
            }
            let descriptor: ImageDescriptor
            do throws(LoadError) { descriptor = try ImageDescriptor.open(image.path) } catch { throw CommandFailure.failed("\(image.path): \(error)") }
            signed.append(Signed(path: image.path, file: file, directory: read.bestCodeDirectory, descriptor: descriptor, signature: signature))
        }
        let pages = signed.reduce(0) { $0 + $1.directory.pageCount }
        let bytes = signed.reduce(0) { $0 + Int($1.directory.codeLimit) }

        // Each kept round: the three checks alone, then the eager launch, with --verify-pages
        // (its total and its verification phase), and without the cdHash check.
        typealias Round = (full: Int64, cdhash: Int64, page: Int64, eager: Int64, verifying: Int64, phase: Int64, unchecked: Int64)
        var rounds: [Round] = []
        var verified = 0
        let withPages = changed(options) { $0.verifyPages = true }
        for round in 0...runs {
            let fullTime = try timed { for image in signed { _ = try CodeSigning.verify(image.file.image, path: image.path) } }.nanoseconds
            let cdhashTime = try timed {
                for image in signed {
                    let signature = image.signature
                    let blob = ByteView(image.descriptor.read(offset: signature.codeDirectoryOffset, count: signature.codeDirectorySize))
                    guard signature.hashType.cdHash(of: blob) == signature.cdHash else {
                        throw CommandFailure.failed("\(image.path): its cdHash is not the one recorded")
                    }
                }
            }.nanoseconds
            let pageTime = try timed {
                for image in signed {
                    let view = image.file.image.view
                    for slot in 0..<image.directory.pageCount {
                        let range = image.directory.pageRange(slot)
                        guard image.directory.verifyPage(try view.slice(range.lowerBound, range.count), slot: slot) else {
                            throw CommandFailure.failed("\(image.path): page \(slot) does not match its hash")
                        }
                    }
                }
            }.nanoseconds

            let plain = try FastPath.launch(closurePath: closurePath, request: options).released()
            let checked = try FastPath.launch(closurePath: closurePath, request: withPages).released()
            let withoutCdhashCheck = changed(LaunchConfiguration()) { $0.checksCodeDirectories = false }
            let withoutCdhash = try FastPath.launch(closurePath: closurePath, request: options, configuration: withoutCdhashCheck).released()
            verified = checked.pagesVerified ?? 0
            guard round > 0 else { continue }  // round 0 warms caches and is discarded
            rounds.append((fullTime, cdhashTime, pageTime, plain.timings[.total] ?? 0, checked.timings[.total] ?? 0,
                           checked.timings[.parsing] ?? 0, withoutCdhash.timings[.total] ?? 0))
        }
        func distribution(_ time: KeyPath<Round, Int64>) -> Distribution { Distribution(rounds.map { $0[keyPath: time] }) }
        let (fullCheck, cdhashCheck, eagerLaunch) = (distribution(\.full), distribution(\.cdhash), distribution(\.eager))
        let (uncheckedLaunch, verifyPhase, pageMedian) = (distribution(\.unchecked), distribution(\.phase), distribution(\.page).median)
        let launchCost = eagerLaunch.median - uncheckedLaunch.median
        let (megabytes, verifiedMegabytes) = (Double(bytes) / 1_048_576, Double(verified) * 4096 / 1_048_576)
        return CodeSigningCost(
            signedImages: signed.count, signedPages: pages, signedBytes: bytes, fullVerification: fullCheck,
            fullVerificationNsPerPage: ratio(fullCheck.median, Double(pages)), fullVerificationNsPerMb: ratio(fullCheck.median, megabytes),
            cdhashCheck: cdhashCheck, cdhashShareOfDyld3: ratio(cdhashCheck.median, Double(dyld3Median)),
            dyld3WithoutCdhash: uncheckedLaunch, cdhashLaunchCostNs: launchCost, cdhashLaunchShare: ratio(launchCost, Double(eagerLaunch.median)),
            pageCheckNsPerPage: ratio(pageMedian, Double(pages)), pageCheckNsPerMb: ratio(pageMedian, megabytes),
            dyld3Eager: eagerLaunch, dyld3VerifyPages: distribution(\.verifying), verifyPagesChecked: verified, verifyPagesPhase: verifyPhase,
            verifyPagesNsPerPage: ratio(verifyPhase.median, Double(verified)), verifyPagesNsPerMb: ratio(verifyPhase.median, verifiedMegabytes))
    }

    private static func ratio(_ a: Int64, _ b: Double) -> Double { b > 0 ? Double(a) / b : 0 }
}
