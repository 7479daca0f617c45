import Dyld3
import Foundation
import LaunchPlan
import LoaderCore
import LoaderSystem
import MachOReader
import TestSupport
import Testing

/// An image parsed where a dyld3 launch mapped it (`MachOImage(parsingMapped:)`, what a
/// `dlopen` closure built at run time reads the launch's images from) against the same image
/// parsed from its file: the same load commands, and the same export trie and symbols read
/// through the segments that hold them; the exported names also against llvm-objdump's.
@Suite(.bounded) struct MappedImageTests {
    static let apps = ["dlopen", "reexport", "weak-coalesce"]

    @Test(arguments: FixtureApp.variants)
    func aMappedImageReadsAsItsFile(variant: String) async throws {
        var shifted = 0, compared = 0
        for name in Self.apps {
            let app = try FixtureApp.named(name, variant)
            let cache = try Scratch.directory("mapped-image")
            defer { try? FileManager.default.removeItem(atPath: cache) }
            let launch = try FastPath.launch(closurePath: try app.install(into: cache),
                                             request: LaunchOptions(roots: [app.executable], arch: app.arch, root: app.root, run: false))
            defer { launch.memory.release() }
            for mapped in launch.memory.images {
                let path = mapped.plan.path
                let file = try ImageFile.load(path: path, arch: app.arch).image
                guard let extent = ImageFile.readableExtent(mapped.plan) else {
                    Issue.record("\(path): its mapping has a gap or an unreadable segment")
                    continue
                }
                let image = try MachOImage(parsingMapped: UnsafeMemory.borrowedView(address: mapped.base, count: extent))
                #expect(image.isMapped && !file.isMapped)
                #expect(image.loadCommands.map(\.type) == file.loadCommands.map(\.type), "\(path)")
                #expect(image.dependencies == file.dependencies && image.id == file.id && image.rpaths == file.rpaths && image.uuid == file.uuid, "\(path)")
                let exports = try image.exportTrie()?.allSymbols().map(\.name) ?? []
                let fileExports = try file.exportTrie()?.allSymbols().map(\.name) ?? []
                #expect(exports == fileExports, "\(path)")
                let objdump = try await Oracle.objdump(["--macho", "--exports-trie", path])
                #expect(exports.allSatisfy { objdump.contains($0) }, "\(path): an export llvm-objdump does not list")
                if let table = try SymbolTable(image: image), let fileTable = try SymbolTable(image: file) {
                    #expect(table.count == fileTable.count)
                    for index in 0..<table.count {
                        let (entry, fileEntry) = (try table.entry(index), try fileTable.entry(index))
                        let (name, fileName) = (try table.name(of: entry), try fileTable.name(of: fileEntry))
                        #expect(entry.value == fileEntry.value && name == fileName, "\(path) symbol \(index)")
                    }
                }
                // Whether __LINKEDIT lies elsewhere in the mapping than in the file (zero-fill before it).
                if let linkedit = file.segments.first(where: { $0.name == "__LINKEDIT" }), linkedit.vmAddress - mapped.plan.preferredBase != linkedit.fileOffset {
                    shifted += 1
                }
                compared += 1
            }
        }
        #expect(compared > 0)
        #expect(shifted > 0, "no image whose __LINKEDIT is mapped away from its file offset: the translation is untested")
    }

    /// An image whose segments leave a gap in its mapping cannot be read where it lies.
    @Test func aMappingWithAGapIsNotReadInPlace() {
        let segment = { (offset: UInt64, size: UInt64) in
            SegmentPlan(name: "S", vmOffset: offset, vmSize: size, fileOffset: offset, fileSize: size, protection: [.read], readOnlyAfterFixups: false)
        }
        #expect(ImageFile.readableExtent(ImagePlan(path: "a", preferredBase: 0, vmSize: 0x3000, segments: [segment(0, 0x1000), segment(0x1000, 0x2000)])) == 0x3000)
        #expect(ImageFile.readableExtent(ImagePlan(path: "a", preferredBase: 0, vmSize: 0x3000, segments: [segment(0, 0x1000), segment(0x2000, 0x1000)])) == nil)
    }
}
