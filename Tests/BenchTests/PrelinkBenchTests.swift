import Foundation
import LaunchBench
import Testing
import TestSupport

/// `dyld3 bench --prelinked`'s machinery on the 1-dylib app, 2 runs, warm and cold: every
/// path measured, the set's size and install time present, the JSON snake_case with its
/// schema version. Structure only: no timing is asserted.
@Suite(.bounded) struct PrelinkBenchTests {
    @Test func oneDylibPrelinkedBenchIsComplete() async throws {
        let out = NSTemporaryDirectory() + "prelink-bench-test-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: out) }
        let configuration = BenchConfiguration(dylibCounts: [1], runs: 2, repositoryRoot: BenchTests.repository,
                                               toolPath: nil, cold: true, eviction: .fadvise)
        let report = try await PrelinkBench.run(configuration) { _ in }
        let (results, eviction) = (report.sizes, report.coldEviction)
        #expect(eviction == .fadvise)
        let size = try #require(results.first)
        #expect(results.count == 1 && size.dylibs == 1 && size.images == 3)
        #expect(size.slideLocations > 0 && size.slidePages > 0 && size.setBytes > size.imageBytes / 2 && size.imageBytes > 0)
        #expect(size.install.samples.count == 3 && size.install.min > 0)
        // One mmap, then at least one mprotect per image (its __TEXT); the copy slid for the
        // boot is the set's data after a header.
        #expect(size.mappingCalls > size.images)
        #expect(size.slidWrite > 0 && size.slidBytes > 0 && size.slidBytes <= size.setBytes + 65536)
        for path in PrelinkBench.paths {
            let warm = try #require(size.warm[path], "no warm samples for \(path)")
            #expect(warm.samples.count == 2 && warm.samples.allSatisfy { $0 > 0 }, "\(path): \(warm.samples)")
            let cold = try #require(size.cold?[path], "no cold samples for \(path)")
            #expect(cold.samples.count == 2 && cold.samples.allSatisfy { $0 > 0 }, "\(path): \(cold.samples)")
        }
        let data = try LaunchBench.encoder.encode(report)
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(json["schema_version"] as? Int == 1)
        let first = try #require((json["sizes"] as? [[String: Any]])?.first)
        #expect(first["warm_ns"] != nil && first["install_ns"] != nil && first["set_bytes"] != nil && first["slid_write_ns"] != nil)
        let markdown = PrelinkBench.markdown(report)
        #expect(markdown.contains("| 1 | 3 |") && markdown.contains("## cold") && markdown.contains("set / images"))
        #expect(ChartTests.wideTableLines(markdown).isEmpty, "\(ChartTests.wideTableLines(markdown).prefix(3))")
    }
}
