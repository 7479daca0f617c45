import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import LaunchBench
import Testing
import TestSupport

/// `dyld3 bench`'s machinery on the 1-dylib app, 3 runs: every measurement is present and
/// positive, and the JSON, Markdown and SVG files are well formed. Structure only: no timing
/// is asserted.
@Suite(.bounded) struct BenchTests {
    static let repository = BenchConfiguration.findRepositoryRoot(from: #filePath)!

    /// The `dyld3` executable the same `swift build` produced, for the fresh-process samples.
    static var tool: String? {
        let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let candidates = [directory, directory.deletingLastPathComponent()].map { $0.appendingPathComponent("dyld3").path }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    @Test func oneDylibBenchIsComplete() async throws {
        let out = NSTemporaryDirectory() + "bench-test-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: out) }
        var configuration = BenchConfiguration(
            dylibCounts: [1], runs: 3, repositoryRoot: BenchTests.repository, toolPath: BenchTests.tool,
            cold: true, eviction: .fadvise)
        configuration.pageIn = true
        let report = try await LaunchBench.run(configuration) { _ in }
        try LaunchBench.write(report, to: out)

        #expect(report.sizes.count == 1)
        let size = try #require(report.sizes.first)
        #expect(size.dylibs == 1 && size.images == 3 && size.fixups > 0 && size.elfRelocations > 0 && size.fixupPages > 0)
        #expect(report.coldEviction == .fadvise)
        for path in ["dyld2", "dyld3", "floor", "floor-protected", "glibc", "glibc-one-dir"] {
            let cold = try #require(size.cold?[path], "no cold samples for \(path)")
            #expect(cold.samples.count == 3 && cold.samples.allSatisfy { $0 > 0 }, "\(path): \(cold.samples)")
            let resident = try #require(size.residentAfterEviction?[path])
            #expect(resident.total > 0 && resident.resident <= resident.total)
            let warm = try #require(size.warm[path], "no warm samples for \(path)")
            #expect(warm.samples.count == 3 && warm.samples.allSatisfy { $0 > 0 }, "\(path): \(warm.samples)")
            #expect(warm.min <= warm.median && warm.median <= warm.p90 && warm.p90 <= warm.max)
            #expect((size.nanosecondsPerFixup[path] ?? 0) > 0)
            #expect((size.pagesDirtied[path] ?? 0) > 0, "\(path) dirtied no page")
        }
        #expect(BenchTests.tool != nil, "the dyld3 executable next to the test bundle: fresh-process samples")
        if BenchTests.tool != nil {
            for path in ["dyld2", "dyld3", "glibc", "glibc-one-dir"] {
                #expect(size.fresh[path]?.samples.count == 3 && size.fresh[path]!.samples.allSatisfy { $0 > 0 })
                #expect((size.freshMaxRssKilobytes[path]?.median ?? 0) > 0)
            }
        }
        for phase in ["closure", "mapping", "bind", "total"] {
            #expect((size.dyld3Phases[phase] ?? 0) > 0, "dyld3 phase \(phase)")
            #expect((size.coldDyld3Phases?[phase] ?? 0) > 0, "dyld3 cold phase \(phase)")
        }
        #expect(size.closure.build.samples.count == 3 && size.closure.build.min > 0)
        #expect(size.closure.fileBytes > 0 && size.closure.imageMetadataBytes > 0 && size.closure.bytesPerFixup > 0)
        #expect(size.benchMaxRssKilobytes > 0)

        let json = try Data(contentsOf: URL(fileURLWithPath: out + "/bench.json"))
        let object = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
        #expect((object["sizes"] as? [[String: Any]])?.count == 1)
        #expect(try LaunchBench.decodeReport(json).sizes.first?.fixups == size.fixups)
        #expect(object["schema_version"] as? Int == BenchReport.currentSchemaVersion)
        #expect(ChartTests.keysWithCapitals(object).isEmpty, "\(ChartTests.keysWithCapitals(object))")
        // This run measured every path, cold and page-in included: every time says its unit.
        #expect(ChartTests.distributionsWithoutUnit(object).isEmpty, "\(ChartTests.distributionsWithoutUnit(object).prefix(5))")

        // Code signatures: every image of the generated app is signed (ld64.lld); each check
        // covers all of them, and the per-page and per-MB figures are their medians over the
        // counts. `--verify-pages` checks every code slot of an eager launch's images.
        let signing = try #require(size.codeSigning)
        #expect(signing.signedImages == size.images && signing.signedPages >= signing.signedImages)
        #expect(signing.signedBytes <= signing.signedPages * 4096 && signing.signedBytes > (signing.signedPages - signing.signedImages) * 4096)
        for distribution in [signing.fullVerification, signing.cdhashCheck, signing.dyld3Eager, signing.dyld3VerifyPages, signing.verifyPagesPhase,
                             signing.dyld3WithoutCdhash] {
            #expect(distribution.samples.count == 3 && distribution.samples.allSatisfy { $0 > 0 }, "\(distribution.samples)")
        }
        #expect(signing.verifyPagesChecked == signing.signedPages)
        #expect(signing.cdhashLaunchCostNs == signing.dyld3Eager.median - signing.dyld3WithoutCdhash.median)
        #expect(abs(signing.cdhashLaunchShare * Double(signing.dyld3Eager.median) - Double(signing.cdhashLaunchCostNs)) < 1)
        let megabytes = Double(signing.signedBytes) / 1_048_576
        #expect(abs(signing.fullVerificationNsPerPage * Double(signing.signedPages) - Double(signing.fullVerification.median)) < 1)
        #expect(abs(signing.fullVerificationNsPerMb * megabytes - Double(signing.fullVerification.median)) < 1)
        #expect(abs(signing.cdhashShareOfDyld3 * Double(size.warm["dyld3"]!.median) - Double(signing.cdhashCheck.median)) < 1)
        #expect(signing.pageCheckNsPerPage > 0 && abs(signing.pageCheckNsPerMb / signing.pageCheckNsPerPage - Double(signing.signedPages) / megabytes) < 1e-6 * signing.pageCheckNsPerMb)
        #expect(abs(signing.verifyPagesNsPerPage * Double(signing.verifyPagesChecked) - Double(signing.verifyPagesPhase.median)) < 1)
        let signingObject = try #require((object["sizes"] as? [[String: Any]])?.first?["code_signing"] as? [String: Any])
        for key in ["signed_images", "signed_pages", "signed_bytes", "full_verification_ns", "full_verification_ns_per_page",
                    "full_verification_ns_per_mb", "cdhash_check_ns", "cdhash_share_of_dyld3", "page_check_ns_per_page",
                    "page_check_ns_per_mb", "dyld3_eager_ns", "dyld3_verify_pages_ns", "verify_pages_checked", "verify_pages_phase_ns",
                    "verify_pages_ns_per_page", "verify_pages_ns_per_mb", "dyld3_without_cdhash_ns", "cdhash_launch_cost_ns", "cdhash_launch_share"] {
            #expect(signingObject[key] != nil, "bench.json code_signing has no \(key)")
        }

        let markdown = try String(contentsOfFile: out + "/bench.md", encoding: .utf8)
        #expect(markdown.contains("| dylibs |") && markdown.contains("## Performance targets") && markdown.contains("## Code-signature verification"))
        #expect(markdown.contains("## Cold launches") && markdown.contains("glibc (one dir)") && markdown.contains("glibc (per-framework dirs)"))
        #expect(ChartTests.wideTableLines(markdown).isEmpty, "\(ChartTests.wideTableLines(markdown).prefix(3))")

        #expect(LaunchBench.outputFiles(report).contains("page-in.svg") && markdown.contains("## Page-in linking"))
        let pageIn = try #require(size.pageIn)
        #expect(pageIn.launch.samples.count == 3 && pageIn.touch.count == PageInResult.touchLevels.count && pageIn.fixupPages > 0)
        for chart in ["time-vs-dylibs.svg", "dyld3-phases.svg", "page-in.svg"] {
            let data = try Data(contentsOf: URL(fileURLWithPath: out + "/" + chart))
            let parser = XMLParser(data: data)
            let recorder = ElementRecorder()
            parser.delegate = recorder
            #expect(parser.parse(), "\(chart): \(String(describing: parser.parserError))")
            #expect(recorder.elements.first == "svg")
            #expect(recorder.elements.contains("polyline") || recorder.elements.contains("rect"))
        }
    }
}

/// Collects element names while an SVG is parsed.
final class ElementRecorder: NSObject, XMLParserDelegate {
    var elements: [String] = []
    func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                attributes: [String: String] = [:]) {
        elements.append(name)
    }
}
