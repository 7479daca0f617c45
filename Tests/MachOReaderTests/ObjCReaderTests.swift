import Foundation
import MachOReader
import TestSupport
import Testing

/// The Objective-C reader (``ObjCFileImage`` over ``ObjCClass``, ``ObjCClassRO``,
/// ``ObjCCategory``, ``ObjCMethodList``) against llvm-objdump-19 on every image of the
/// objc fixture app, all four builds (see ``ObjCOracle`` for what llvm shows of a chained
/// image and where the rest comes from).
@Suite(.bounded) struct ObjCReaderTests {
    struct Image: CustomStringConvertible, Sendable {
        let variant: String
        let relativePath: String
        var path: String { FixtureApp.buildDirectory.appendingPathComponent("\(variant)/objc.app/\(relativePath)").path }
        var chained: Bool { variant.hasSuffix("chained") }
        /// The same image from the opcode-based build of the same architecture.
        var opcodeTwin: Image { Image(variant: variant.replacingOccurrences(of: "chained", with: "opcodes"), relativePath: relativePath) }
        var description: String { "\(variant)/\(relativePath)" }
    }

    static let images: [Image] = FixtureApp.variants.flatMap { variant in
        ["objc", "Frameworks/Base.framework/Base", "Frameworks/Extras.framework/Extras", "Frameworks/Shapes.framework/Shapes"]
            .map { Image(variant: variant, relativePath: $0) }
    }

    static func fileImage(_ path: String) throws -> ObjCFileImage {
        let image = try MachOImage(parsing: try Corpus.bytes(path))
        return try #require(try ObjCFileImage(image: image), "\(path) has no __objc_imageinfo")
    }

    /// Classes and categories: every field llvm prints for them (list entries, class and
    /// metaclass addresses by symbol, superclass by symbol, `class_ro_t` flags and name,
    /// method lists with each method's name, types and implementation).
    @Test(arguments: images) func classesAndCategoriesMatchObjdump(_ image: Image) async throws {
        let objc = try Self.fileImage(image.path)
        let symbols = try await ObjCOracle.symbols(image.path)
        let twin = image.opcodeTwin
        let expected = try await ObjCOracle.metadataLines(twin.path, binds: try await ObjCOracle.pointers(twin.path, chained: false))
        let actual = try MetadataLines.render(objc, symbols: symbols)
        #expect(expected.contains { $0.hasPrefix("class ") || $0.hasPrefix("category ") }, "llvm shows no classes or categories in \(twin)")
        #expect(expected.contains { $0.hasPrefix("method ") }, "llvm shows no methods in \(twin)")
        if image.chained {
            try Self.expectSame(MetadataLines.withoutAddresses(expected), MetadataLines.withoutAddresses(actual), image)
        } else {
            try Self.expectSame(expected, actual, image)
        }
    }

    /// Every pointer llvm decodes (chained: every rebase target and bind; opcode-based:
    /// every bind) reads the same through the reader's view of the file.
    @Test(arguments: images) func pointersMatchObjdump(_ image: Image) async throws {
        let objc = try Self.fileImage(image.path)
        let pointers = try await ObjCOracle.pointers(image.path, chained: image.chained)
        #expect(!pointers.isEmpty)
        var compared = 0
        for (slot, expected) in pointers.sorted(by: { $0.key < $1.key }) {
            let actual = try objc.pointer(at: slot, what: "pointer")
            #expect(actual == expected, "\(image) 0x\(String(slot, radix: 16)): reader \(actual), llvm \(expected)")
            compared += 1
        }
        #expect(compared == pointers.count)
    }

    /// `__objc_selrefs`: each reference's address and selector name, in order.
    @Test(arguments: images) func selectorReferencesMatchObjdump(_ image: Image) async throws {
        let objc = try Self.fileImage(image.path)
        let pointers = try await ObjCOracle.pointers(image.path, chained: image.chained)
        let expected = try await ObjCOracle.selectorReferences(image.path, pointers: pointers, chained: image.chained)
        let actual = try (0..<objc.selectorReferenceCount).map { index in
            let reference = try objc.selectorReference(index)
            return "0x\(String(reference.slot, radix: 16)) \(reference.name ?? "<\(reference.target)>")"
        }
        #expect(actual == expected.map { "0x\(String($0.slot, radix: 16)) \($0.name)" }, "\(image)")
    }

    static func expectSame(_ expected: [String], _ actual: [String], _ image: Image) throws {
        for index in 0..<max(expected.count, actual.count) {
            let want = index < expected.count ? expected[index] : "<end>"
            let got = index < actual.count ? actual[index] : "<end>"
            guard want == got else {
                Issue.record("\(image) line \(index + 1):\n  llvm-objdump: \(want)\n  reader:       \(got)")
                return
            }
        }
    }
}
