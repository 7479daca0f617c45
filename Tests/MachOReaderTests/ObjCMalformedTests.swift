import Foundation
import MachOReader
import TestSupport
import Testing

/// Hostile Objective-C metadata: each bad structure is refused with one error naming the
/// image and the address (or, read from a file, the file offset of the list entry), never a
/// crash, an endless walk or an allocation the input sizes.
@Suite(.bounded) struct ObjCMalformedTests {
    /// An address space of one 4 KiB segment of image 3 at 0x10000, holding `words` (little-endian 64-bit) from its start.
    static func space(_ words: [UInt64], bytes extra: [UInt8] = []) -> ObjCAddressSpace {
        var bytes = words.flatMap { word in (0..<8).map { UInt8(truncatingIfNeeded: word >> (8 * UInt64($0))) } } + extra
        bytes += [UInt8](repeating: 0, count: 4096 - bytes.count)
        return ObjCAddressSpace(regions: [.init(image: 3, start: 0x10000, vmOffset: 0x1000, view: ByteView(bytes))])
    }

    static func methodListHeader(flags: UInt32, count: UInt32) -> UInt64 { UInt64(flags) | UInt64(count) << 32 }

    /// The Objective-C metadata error `body` throws (nil when it returns; any other error fails the test).
    static func error(_ body: () throws -> Void) -> (image: Int?, address: UInt64, what: String)? {
        do {
            try body()
            return nil
        } catch let error as MachOError {
            guard case let .objCMetadata(image, address, what) = error.reason else {
                Issue.record("unexpected \(error)")
                return nil
            }
            return (image, address, what)
        } catch {
            Issue.record("unexpected \(error)")
            return nil
        }
    }

    @Test func methodListCountOutOfRange() throws {
        let space = Self.space([Self.methodListHeader(flags: 24, count: 0xffff_ffff)])
        let error = try #require(Self.error { _ = try ObjCMethodList(in: space, at: 0x10000) })
        #expect(error.image == 3 && error.address == 0x10000)
        #expect(error.what.contains("count 4294967295"))
    }

    @Test(arguments: [(UInt32(0), "24"), (8, "24"), (ObjCMethodList.relativeFlag | 8, "12")])
    func methodListEntrySizeTooSmall(_ flags: UInt32, _ needed: String) throws {
        let space = Self.space([Self.methodListHeader(flags: flags, count: 1)])
        let error = try #require(Self.error { _ = try ObjCMethodList(in: space, at: 0x10000) })
        #expect(error.image == 3 && error.address == 0x10000 && error.what.contains("needs \(needed)"))
    }

    /// The largest count and entry size the header can claim ask for 68 GB: refused by the
    /// bounds check, nothing allocated (the list is a view of the segment).
    @Test func methodListPastItsSegment() throws {
        for (flags, count) in [(UInt32(24), UInt32(200)), (0xfffc, ObjCMethodList.maxCount)] {
            let space = Self.space([Self.methodListHeader(flags: flags, count: count)])
            let error = try #require(Self.error { _ = try ObjCMethodList(in: space, at: 0x10000) })
            #expect(error.image == 3 && error.address == 0x10008 && error.what.contains("outside every segment"), "\(error)")
        }
    }

    /// class_t at 0x10000 → superclass 0x10028 → superclass 0x10000.
    @Test func superclassCycleIsRefused() throws {
        let space = Self.space([0, 0x10028, 0, 0, 0, 0, 0x10000, 0, 0, 0])
        let error = try #require(Self.error { _ = try ObjCClass.superclassChain(in: space, from: 0x10000, limit: 100) })
        #expect(error.image == 3 && error.address == 0x10000 && error.what.contains("loops back to 0x10000"), "\(error)")
        // A self-loop too.
        let selfLoop = Self.space([0, 0x10000, 0, 0, 0])
        #expect(Self.error { _ = try ObjCClass.superclassChain(in: selfLoop, from: 0x10000, limit: 100) } != nil)
    }

    /// 20 classes in a line: the walk stops at its bound, and a chain within it is returned whole.
    @Test func superclassChainIsBounded() throws {
        var words: [UInt64] = []
        for index in 0..<20 { words += [0, index == 19 ? 0 : 0x10000 + UInt64(index + 1) * 40, 0, 0, 0] }
        let space = Self.space(words)
        let error = try #require(Self.error { _ = try ObjCClass.superclassChain(in: space, from: 0x10000, limit: 5) })
        #expect(error.what.contains("longer than 5"))
        #expect(try ObjCClass.superclassChain(in: space, from: 0x10000, limit: 20).count == 20)
        // Stopping at an already-visited class (what the +load scheduler does).
        #expect(try ObjCClass.superclassChain(in: space, from: 0x10000, limit: 20) { $0 == 0x10000 + 40 * 3 }.count == 3)
    }

    @Test func pointersOutsideTheImageAreRefused() throws {
        let space = Self.space([])
        let errors = [
            Self.error { _ = try ObjCClass(in: space, at: 0xdead_0000) },
            Self.error { _ = try ObjCClassRO(in: space, at: 0x10000 + 4096 - 8) },
            Self.error { _ = try ObjCCategory(in: space, at: 0x0) },
        ]
        for error in errors {
            #expect(error?.what.contains("outside every segment") == true, "\(String(describing: error))")
        }
    }

    @Test func namesWithoutTerminatorAreRefused() throws {
        let space = ObjCAddressSpace(regions: [.init(image: 1, start: 0x2000, vmOffset: 0, view: ByteView([UInt8](repeating: 0x41, count: 64)))])
        let error = try #require(Self.error { _ = try space.cString(at: 0x2000, what: "class name") })
        #expect(error.image == 1 && error.address == 0x2000 && error.what.contains("no NUL"))
        let long = ObjCAddressSpace(regions: [.init(image: 1, start: 0x2000, vmOffset: 0, view: ByteView([UInt8](repeating: 0x41, count: 10_000) + [0]))])
        #expect(Self.error { _ = try long.cString(at: 0x2000, what: "class name") } != nil)
    }

    // MARK: Damaged files

    static let shapes = FixtureApp.buildDirectory.appendingPathComponent("x86_64-opcodes/objc.app/Frameworks/Shapes.framework/Shapes").path

    static func readEverything(_ bytes: [UInt8]) -> Result<Int, MachOError> {
        do {
            guard let objc = try ObjCFileImage(image: try MachOImage(parsing: bytes)) else { return .success(0) }
            var read = 0
            for index in 0..<objc.classCount { _ = try objc.classDescription(index); read += 1 }
            for index in 0..<objc.categoryCount { _ = try objc.categoryDescription(index); read += 1 }
            for index in 0..<objc.selectorReferenceCount { _ = try objc.selectorReference(index); read += 1 }
            return .success(read)
        } catch {
            return .failure(error)
        }
    }

    /// Forged fields of a real image: the error names the list entry (its file offset and
    /// address) and the bad address.
    @Test func forgedFieldsNameTheEntryAndAddress() throws {
        let original = try Corpus.bytes(Self.shapes)
        let objc = try #require(try ObjCFileImage(image: try MachOImage(parsing: original)))
        let first = try objc.classDescription(0)
        let metaMethods = try #require(first.metaclass?.methods)
        let entryOffset = objc.fileOffset(of: first.listEntry)
        let cases: [(offset: Int, value: [UInt8], message: String)] = [
            (objc.fileOffset(of: metaMethods.address) + 4, [0xff, 0xff, 0xff, 0x7f], "method list count 2147483647"),
            (objc.fileOffset(of: metaMethods.address), [4, 0, 0, 0], "method list entry size 4"),
            (entryOffset, [0xef, 0xbe, 0xad, 0xde, 0, 0, 0, 0], "class_t (40 bytes) is outside every segment"),
            (objc.fileOffset(of: first.cls.roAddress) + 24, [0xf0, 0xff, 0xff, 0xff, 0, 0, 0, 0], "class name is outside every segment"),
        ]
        for forged in cases {
            var bytes = original
            bytes.replaceSubrange(forged.offset..<forged.offset + forged.value.count, with: forged.value)
            guard case let .failure(error) = Self.readEverything(bytes) else {
                Issue.record("forging 0x\(String(forged.offset, radix: 16)) was accepted")
                continue
            }
            #expect(error.offset == entryOffset, "\(error)")
            #expect(error.description.contains("__objc_classlist entry 0 (0x\(String(first.listEntry, radix: 16)))"), "\(error)")
            #expect(error.description.contains(forged.message), "\(error)")
        }
    }

    /// Every byte of the image's Objective-C sections set to 0xff in turn, and every
    /// truncation inside them: each read ends in a result or one `MachOError`.
    @Test func everyDamagedByteOfTheMetadata() throws {
        let original = try Corpus.bytes(Self.shapes)
        let image = try MachOImage(parsing: original)
        guard case .success(let intact) = Self.readEverything(original) else { Issue.record("intact image refused"); return }
        #expect(intact > 0)
        var refused = 0, cases = 0
        for section in image.sections where section.name.hasPrefix("__objc_") {
            let start = Int(section.fileOffset)
            for offset in start..<start + Int(section.size) {
                var bytes = original
                bytes[offset] ^= 0xff
                if case .failure = Self.readEverything(bytes) { refused += 1 }
                if case .failure = Self.readEverything(Array(original[0..<offset])) { refused += 1 }
                cases += 2
            }
        }
        #expect(cases > 1000 && refused > 0, "\(refused) of \(cases) refused")
    }
}
