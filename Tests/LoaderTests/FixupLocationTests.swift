import Dyld2
import Foundation
import LoaderCore
import Testing
import TestSupport

/// Every location the slow path writes is one llvm-objdump-19 lists as a fixup, and every
/// fixup llvm-objdump lists is written: per image, the address sets are equal.
@Suite(.bounded) struct FixupLocationTests {
    /// The addresses llvm-objdump lists for `path`'s `arch` slice: `--dyld-info` rows for
    /// chained images, the four opcode tables otherwise.
    static func objdumpAddresses(_ path: String, arch: String, chained: Bool) async throws -> Set<UInt64> {
        let flags = chained ? ["--dyld-info"] : ["--rebase", "--bind", "--lazy-bind", "--weak-bind"]
        var addresses = Set<UInt64>()
        for flag in flags {
            let text = try await Oracle.objdump([flag, "--arch=\(arch)", path])
            for line in text.split(separator: "\n") {
                let columns = line.split(separator: " ", omittingEmptySubsequences: true)
                // Rows start with a segment name; the address is the first 0x column.
                guard let first = columns.first, first.hasPrefix("__"),
                      let column = columns.first(where: { $0.hasPrefix("0x") }),
                      let address = UInt64(column.dropFirst(2), radix: 16) else { continue }
                addresses.insert(address)
            }
        }
        return addresses
    }

    @Test(arguments: SlowPathTests.apps.filter(\.launches))
    func writtenLocationsAreTheListedFixups(_ app: FixtureApp) async throws {
        let launch = try SlowPath.launch(LaunchOptions(
            roots: [app.executable], arch: app.arch, root: app.root, run: false, recordFixups: true))
        defer { launch.memory.release() }
        #expect(try await Self.compareWrittenWithListed(launch, arch: app.arch, label: "\(app)") > 0)
    }

    /// Checks each image's written fixup locations against llvm-objdump's listing of the
    /// image (but for images `skip` names); returns how many locations were compared.
    static func compareWrittenWithListed(
        _ launch: Launch, arch: String, label: String, skip: (String) -> Bool = { _ in false }
    ) async throws -> Int {
        let fixups = try #require(launch.fixups)
        var compared = 0
        for (index, image) in launch.memory.images.enumerated() where !skip(image.plan.path) {
            let written = Set(fixups[index].map { image.plan.preferredBase + $0.vmOffset })
            let chained = try await Oracle.objdump(["--chained-fixups", "--arch=\(arch)", image.plan.path]).contains("chained fixups header")
            let listed = try await objdumpAddresses(image.plan.path, arch: arch, chained: chained)
            #expect(written == listed, "\(label) \(image.plan.path): written-only \(written.subtracting(listed).sorted()), listed-only \(listed.subtracting(written).sorted())")
            compared += written.count
        }
        return compared
    }
}
