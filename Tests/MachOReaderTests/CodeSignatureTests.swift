import Foundation
import MachOInspect
import MachOReader
import Testing
import TestSupport

/// Embedded code signatures against independent implementations: ld64.lld wrote every
/// signed fixture's signature (so every one must verify), tools/damage-code-signature
/// damaged copies of them and said, from its own reading with Python's struct and hashlib,
/// which page or blob each change hits and what each pristine file's cdHash is;
/// llvm-objdump reads LC_CODE_SIGNATURE's range; Apple's ld64 signed the corpus.
@Suite(.bounded) struct CodeSignatureTests {
    static let signedRoot = Paths.readerFixtures.appendingPathComponent("signed")

    /// tools/damage-code-signature's manifest.
    static func manifest() throws -> [String: [String: Any]] {
        let url = signedRoot.appendingPathComponent("damaged/manifest.json")
        let object = try JSONSerialization.jsonObject(with: try Data(contentsOf: url))
        return try #require(object as? [String: [String: Any]])
    }

    /// The signed fixture a manifest name stands for (`x86_64-chained-app`, `fat-app`, ...).
    static func signedPath(_ name: String) -> String {
        if name == "fat-app" { return signedRoot.appendingPathComponent("fat/app").path }
        let variant = name.split(separator: "-").prefix(2).joined(separator: "-")
        let file = name.hasSuffix("-libbase") ? "libbase.dylib" : "app"
        return signedRoot.appendingPathComponent("\(variant)/\(file)").path
    }

    static func verify(_ path: String) throws -> SignatureVerification {
        try SignatureVerification(path: path, file: ByteView(try Corpus.bytes(path)), arch: .all)
    }

    @Test func everySignedFixtureVerifiesWithTheCdHashHashlibComputes() throws {
        let signed = try #require(try Self.manifest()["signed"] as? [String: [[String: Any]]])
        #expect(signed.count == 9)
        var slices = 0
        for (name, expected) in signed.sorted(by: { $0.key < $1.key }) {
            let result = try Self.verify(Self.signedPath(name))
            #expect(result.slices.count == expected.count, "\(name)")
            for (slice, want) in zip(result.slices, expected) {
                #expect(slice.arch == want["arch"] as? String, "\(name)")
                #expect(slice.signed && slice.valid, "\(name) (\(slice.arch)): \(slice.problems)")
                #expect(slice.cdHash?.hex == want["cdhash"] as? String, "\(name) (\(slice.arch))")
                #expect(slice.pageSize == want["page_size"] as? Int, "\(name)")
                #expect(slice.pages == want["pages"] as? Int, "\(name)")
                #expect(slice.badPages.isEmpty)
                slices += 1
            }
        }
        #expect(slices == 10)
    }

    @Test func everyDamagedFixtureFailsAtTheDamagedPageOrBlob() throws {
        let damaged = try #require(try Self.manifest()["damaged"] as? [String: [String: Any]])
        #expect(damaged.count == 49)
        var pages = 0, blobs = 0, sealed = 0
        for (file, expect) in damaged.sorted(by: { $0.key < $1.key }) {
            let path = Self.signedRoot.appendingPathComponent("damaged/\(file)").path
            let result = try Self.verify(path)
            let arch = try #require(expect["arch"] as? String)
            for slice in result.slices where slice.arch != arch {
                #expect(slice.valid, "\(file): the undamaged \(slice.arch) slice")
            }
            let slice = try #require(result.slices.first { $0.arch == arch })
            #expect(slice.signed && !slice.valid, "\(file)")
            if let page = expect["bad_page"] as? Int {
                #expect(slice.error == nil, "\(file): \(String(describing: slice.error))")
                #expect(slice.badPages == [page], "\(file)")
                // Every CodeDirectory names the page, and nothing else.
                #expect(slice.directories.allSatisfy { $0.badPages == [page] }, "\(file)")
                #expect(slice.problems.count == slice.directories.count, "\(file): \(slice.problems)")
                pages += 1
            } else if let name = expect["bad_blob"] as? String {
                // A blob a special slot seals: every CodeDirectory's slot for it fails, nothing else.
                #expect(slice.error == nil && slice.badPages.isEmpty, "\(file)")
                #expect(name == "Entitlements")
                for directory in slice.directories {
                    #expect(directory.specialSlots.filter { $0.status != .valid }.map(\.slot) == [CSSLOT_ENTITLEMENTS], "\(file)")
                }
                #expect(slice.problems.count == slice.directories.count && slice.problems.allSatisfy { $0.contains("Entitlements blob") })
                sealed += 1
            } else {
                let error = try #require(slice.error, "\(file)")
                let blobOffset = try #require(expect["blob_offset"] as? Int)
                let field = try #require(expect["offset"] as? Int)
                #expect(error.codeSignature?.structure.contains("CodeDirectory") == true, "\(file): \(error)")
                if expect["kind"] as? String == "code-limit" {
                    #expect(error.offset == field, "\(file): \(error)")
                    #expect(error.codeSignature?.what.contains("code limit") == true, "\(file): \(error)")
                } else {
                    // The SuperBlob now ends inside the CodeDirectory: the error names that blob's header.
                    #expect((blobOffset..<blobOffset + 8).contains(error.offset), "\(file): \(error)")
                }
                #expect(error.description.hasPrefix("\(path): offset 0x"))
                blobs += 1
            }
        }
        #expect(pages == 29 && blobs == 18 && sealed == 2)
    }

    /// Signatures written by tools/damage-code-signature from first principles (Python's
    /// hashlib): a SHA-1 CodeDirectory with SHA-256, SHA-384 and truncated SHA-256
    /// alternates, seven special slots, requirements, XML and DER entitlements, an empty CMS
    /// wrapper. Every CodeDirectory's cdHash is hashlib's; the image's is the SHA-384 one's.
    @Test func multiHashSignaturesVerifyWithHashlibsCdHashes() throws {
        let resigned = try #require(try Self.manifest()["resigned"] as? [String: [String: Any]])
        #expect(resigned.count == 2)
        for (file, expect) in resigned {
            let path = Self.signedRoot.appendingPathComponent("damaged/\(file)").path
            let result = try Self.verify(path)
            let slice = try #require(result.slices.first)
            #expect(slice.valid, "\(file): \(slice.problems)")
            #expect(slice.cdHash?.hex == expect["cdhash"] as? String)
            #expect(slice.hashType == .sha384 && slice.pages == expect["pages"] as? Int)
            let cdHashes = try #require(expect["cdhashes"] as? [String: String])
            #expect(Dictionary(uniqueKeysWithValues: slice.directories.map { (String($0.slot), $0.cdHash.hex) }) == cdHashes)
            #expect(Set(slice.directories.map(\.hashType)) == Set(CSHashType.allCases))
            for directory in slice.directories {
                #expect(directory.specialSlots.map(\.slot) == (expect["special_slots"] as? [Int])?.map(UInt32.init))
                #expect(directory.specialSlots.allSatisfy { $0.status == .valid })
            }
            let signature = try #require(try CodeSignature.read(from: try MachOImage(parsing: try Corpus.bytes(path))))
            #expect(signature.codeDirectories.map(\.slot) == [CSSLOT_CODEDIRECTORY, 0x1000, 0x1001, 0x1002])
            for directory in signature.codeDirectories {
                #expect(directory.teamID == expect["team_id"] as? String && directory.identifier == expect["identifier"] as? String)
                #expect(directory.nSpecialSlots == 7 && directory.flags == CS_ADHOC | CS_RUNTIME)
                #expect((directory.runtime != nil) == (directory.version >= CS_SUPPORTSRUNTIME))
            }
            #expect(signature.derEntitlements?.entries.map(\.key) == expect["der_entitlements"] as? [String])
            #expect(signature.derEntitlements?.entries.last?.value == "true")
            #expect(signature.entitlements?.xml.contains("<key>com.apple.security.get-task-allow</key>") == true)
            #expect(signature.requirements?.entries.map(\.type) == [kSecDesignatedRequirementType])
            #expect(signature.cms?.cms.count == 0)
        }
    }

    /// The launch check's primitive: one page, one slot, in place.
    @Test func pageVerificationMatchesExactlyTheUndamagedPages() throws {
        let damaged = try #require(try Self.manifest()["damaged"] as? [String: [String: Any]])
        for name in ["x86_64-chained-app", "arm64-opcodes-libbase"] {
            let pristine = try MachOImage(parsing: try Corpus.bytes(Self.signedPath(name)))
            let tampered = try MachOImage(parsing: try Corpus.bytes(Self.signedRoot.appendingPathComponent("damaged/\(name).text-page").path))
            let badPage = try #require(damaged["\(name).text-page"]?["bad_page"] as? Int)
            let directory = try #require(try CodeSignature.read(from: pristine)).bestCodeDirectory
            #expect(directory.pageCount > 1)
            for slot in 0..<directory.pageCount {
                let range = directory.pageRange(slot)
                #expect(directory.verifyPage(try pristine.view.slice(range.lowerBound, range.count), slot: slot))
                #expect(directory.verifyPage(try tampered.view.slice(range.lowerBound, range.count), slot: slot) == (slot != badPage))
                // Another slot's hash matches only a page of the same bytes (padding pages repeat).
                if slot > 0 {
                    let page = try pristine.view.slice(range.lowerBound, range.count)
                    let before = directory.pageRange(slot - 1)
                    let same = page.sameBytes(as: try pristine.view.slice(before.lowerBound, before.count))
                    #expect(directory.verifyPage(page, slot: slot - 1) == same)
                }
            }
            #expect(directory.pageRange(directory.pageCount - 1).upperBound == Int(directory.codeLimit))
            #expect(!directory.verifyPage(try pristine.view.slice(0, 1), slot: directory.pageCount))
            #expect(!directory.verifyPage(try pristine.view.slice(0, 1), slot: -1))
        }
    }

    /// The fixture apps: tools/build-fixtures signs every image ad hoc with ld64.lld (the
    /// builder re-hashes those whose load commands it patches), so every image is signed
    /// and every one verifies. (Objects and link-only stubs under .obj are not images.)
    @Test func everyFixtureImageIsSignedAndVerifies() throws {
        let root = Paths.repoRoot.appendingPathComponent("build/fixtures")
        var signed = 0
        for path in try Corpus.machOFiles(under: root) where !path.contains("/.obj/") {
            for slice in try Self.verify(path).slices {
                #expect(slice.signed && slice.valid, "\(path) (\(slice.arch)): \(slice.problems)")
                signed += 1
            }
        }
        #expect(signed > 0)
    }

    /// Every slice of the corpus that llvm-objdump says has LC_CODE_SIGNATURE is signed and
    /// verifies, with the command's range as llvm-objdump prints it.
    @Test func everySignedCorpusSliceVerifies() async throws {
        var signed = 0
        for path in try Corpus.machOFiles() {
            let result = try Self.verify(path)
            for slice in result.slices {
                let headers = try await Oracle.objdump(["--private-headers", "--arch=\(slice.arch)", path])
                let range = Self.codeSignatureRange(headers)
                #expect(slice.signed == (range != nil), "\(path) (\(slice.arch))")
                guard slice.signed else { continue }
                #expect(slice.valid, "\(path) (\(slice.arch)): \(slice.problems)")
                signed += 1
                let file = try UniversalFile(parsing: try Corpus.bytes(path))
                let image = try file.image(try #require(file.slices.first { $0.offset == slice.offset }))
                let signature = try #require(try CodeSignature.read(from: image))
                #expect(range?.offset == signature.command.dataOffset && range?.size == signature.command.dataSize)
            }
        }
        #expect(signed > 0)
        #expect(signed == 34, "the corpus README's files: update docs/code-signing.md with the new count")
    }

    /// LC_CODE_SIGNATURE's dataoff and datasize from `llvm-objdump --private-headers`.
    static func codeSignatureRange(_ headers: String) -> (offset: UInt32, size: UInt32)? {
        let lines = headers.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        guard let start = lines.firstIndex(where: { $0 == ["cmd", "LC_CODE_SIGNATURE"] }) else { return nil }
        var offset: UInt32?, size: UInt32?
        for fields in lines[start...].prefix(4) where fields.count == 2 {
            if fields[0] == "dataoff" { offset = UInt32(fields[1]) }
            if fields[0] == "datasize" { size = UInt32(fields[1]) }
        }
        guard let offset, let size else { return nil }
        return (offset, size)
    }

    /// Signed fixtures' LC_CODE_SIGNATURE against llvm-objdump, and the CodeDirectory
    /// fields ld64.lld documents writing: ad hoc and linker-signed, SHA-256, 4 KiB pages,
    /// the code limit at the signature, identifier = the file's name, exec segment = __TEXT.
    @Test func signedFixtureFieldsAgreeWithObjdumpAndLld() async throws {
        for variant in ["x86_64-chained", "x86_64-opcodes", "arm64-chained", "arm64-opcodes"] {
            for file in ["app", "libbase.dylib"] {
                let path = Self.signedRoot.appendingPathComponent("\(variant)/\(file)").path
                let image = try MachOImage(parsing: try Corpus.bytes(path))
                let signature = try #require(try CodeSignature.read(from: image))
                let headers = try await Oracle.objdump(["--private-headers", path])
                let range = try #require(Self.codeSignatureRange(headers))
                #expect(range.offset == signature.command.dataOffset && range.size == signature.command.dataSize)
                let directory = signature.bestCodeDirectory
                #expect(signature.codeDirectories.count == 1)
                #expect(directory.flags == CS_ADHOC | CS_LINKER_SIGNED)
                #expect(directory.hashType == .sha256 && directory.pageSize == 4096)
                #expect(directory.codeLimit == UInt64(range.offset))
                #expect(directory.identifier == file)
                let text = try #require(image.segments.first { $0.name == "__TEXT" })
                #expect(directory.execSegBase == text.fileOffset && directory.execSegLimit == text.fileSize)
                #expect((directory.execSegFlags ?? 0) & CS_EXECSEG_MAIN_BINARY == (file == "app" ? CS_EXECSEG_MAIN_BINARY : 0))
                #expect(signature.requirements == nil && signature.cms == nil)
            }
        }
    }

    /// The smallest signed fixture's signature cut at every length: LC_CODE_SIGNATURE's
    /// size patched down, and the CodeDirectory blob parsed from every prefix. Every cut
    /// is an error naming an offset inside the signature; nothing crashes.
    @Test func everyTruncationOfASmallSignatureIsRefused() throws {
        let path = Self.signedRoot.appendingPathComponent("x86_64-opcodes/libbase.dylib").path
        let bytes = try Corpus.bytes(path)
        let image = try MachOImage(parsing: bytes)
        let command = try #require(image.loadCommands.first { $0.type == .codeSignature })
        let signature = try #require(try CodeSignature.read(from: image))
        let superBlobLength = Int(signature.superBlob.length)
        let start = Int(signature.command.dataOffset)
        for length in 0..<superBlobLength {
            var cut = bytes
            withUnsafeBytes(of: UInt32(length).littleEndian) { cut.replaceSubrange(command.offset + 12..<command.offset + 16, with: $0) }
            let damaged = try MachOImage(parsing: cut)
            do {
                _ = try CodeSignature.read(from: damaged)
                Issue.record("a signature cut to \(length) of \(superBlobLength) bytes was accepted")
            } catch {
                #expect((start..<start + superBlobLength).contains(error.offset), "\(length): \(error)")
            }
        }
        let blob = try #require(signature.superBlob.blob(CSSLOT_CODEDIRECTORY)).view
        let blobBytes = try blob.bytes(0, blob.count)
        for length in 0..<blobBytes.count {
            #expect(throws: MachOError.self) { try CS_CodeDirectory(parsing: ByteView(Array(blobBytes[0..<length])), slot: 0) }
        }
        // And the SuperBlob alone, from every prefix of its bytes.
        let superBlobBytes = try signature.superBlob.view.bytes(0, superBlobLength)
        for length in 0..<superBlobLength {
            #expect(throws: MachOError.self) { try CS_SuperBlob(parsing: ByteView(Array(superBlobBytes[0..<length]))) }
        }
    }

    /// Every byte of the SuperBlob's header, index and CodeDirectory header set to 0xff and
    /// to 0x00 in turn: an error or a reading, never a crash; a changed CodeDirectory byte
    /// that still reads changes the cdHash.
    @Test func everyHeaderByteChangedIsHandled() throws {
        let path = Self.signedRoot.appendingPathComponent("arm64-chained/libbase.dylib").path
        let bytes = try Corpus.bytes(path)
        let signature = try #require(try CodeSignature.read(from: try MachOImage(parsing: bytes)))
        let start = Int(signature.command.dataOffset)
        let cdStart = start + Int(try #require(signature.superBlob.blob(CSSLOT_CODEDIRECTORY)).offset)
        let original = signature.cdHash
        var refused = 0
        for offset in start..<cdStart + 88 {
            for value: UInt8 in [0xff, 0x00] where bytes[offset] != value {
                var changed = bytes
                changed[offset] = value
                let image = try MachOImage(parsing: changed)
                do throws(MachOError) {
                    guard let read = try CodeSignature.read(from: image) else { continue }
                    if offset >= cdStart { #expect(read.cdHash != original, "byte 0x\(String(offset, radix: 16))") }
                    _ = CodeSignatureCheck(read, image: image)
                } catch {
                    #expect(error.offset >= start, "\(error)")
                    refused += 1
                }
            }
        }
        #expect(refused > 0)
    }

    /// A CodeDirectory field set to a value that cannot be right is refused at that field's
    /// offset (cs_blobs.h's layout): the hash type, the hash size, the page size, scatter
    /// vectors, the slot counts, the identifier offset, the version.
    @Test func aBadCodeDirectoryFieldIsRefusedAtThatField() throws {
        let path = Self.signedRoot.appendingPathComponent("x86_64-chained/libbase.dylib").path
        let signature = try #require(try CodeSignature.read(from: try MachOImage(parsing: try Corpus.bytes(path))))
        let blob = try #require(signature.superBlob.blob(CSSLOT_CODEDIRECTORY)).view
        let original = try blob.bytes(0, blob.count)
        #expect(throws: Never.self) { try CS_CodeDirectory(parsing: ByteView(original), slot: 0) }
        let cases: [(field: Int, bytes: [UInt8], what: String)] = [
            (37, [9], "hash type"), (36, [20], "hash size"), (39, [30], "page size"), (44, [0, 0, 0, 1], "scatter"),
            (28, [0, 0, 0xff, 0xff], "code slots"), (24, [0, 0, 0xff, 0xff], "special slots"),
            (20, [0xff, 0xff, 0, 0], "identifier offset"), (8, [0, 2, 0, 0], "version"),
        ]
        for (field, bytes, what) in cases {
            var changed = original
            changed.replaceSubrange(field..<field + bytes.count, with: bytes)
            do {
                _ = try CS_CodeDirectory(parsing: ByteView(changed), slot: 0)
                Issue.record("\(what): accepted")
            } catch {
                // Too many special slots for hashOffset: either field can be the wrong one,
                // and the error names hashOffset with the count.
                #expect(error.offset == field || (what == "special slots" && error.offset == 16), "\(what): \(error)")
                #expect(error.codeSignature?.structure == "CodeDirectory")
            }
        }
    }

    @Test func cdHashRoundTripsThroughHex() throws {
        let signature = try #require(try CodeSignature.read(from: try MachOImage(parsing: try Corpus.bytes(Self.signedPath("arm64-chained-app")))))
        let hash = signature.cdHash
        #expect(CDHash(hex: hash.hex) == hash)
        #expect(CDHash(bytes: hash.bytes) == hash)
        #expect(hash.hex.count == 40)
        #expect(CDHash(hex: String(hash.hex.dropLast())) == nil)
    }

    /// `dyld3 codesign verify`: its exit statuses and JSON.
    @Test func verifyCommandExitStatusesAndJSON() async throws {
        let valid = Self.signedPath("fat-app")
        let unsigned = Paths.readerFixtures.appendingPathComponent("x86_64-chained/app").path
        let damaged = Self.signedRoot.appendingPathComponent("damaged/x86_64-chained-app.data-page").path
        let manifest = try #require(try Self.manifest()["damaged"]?["x86_64-chained-app.data-page"] as? [String: Any])

        let ok = try await Dyld3Binary.run(["codesign", "verify", valid, "--json"])
        #expect(ok.status == 0, "\(ok.stderr)")
        let slices = try #require(try JSONSerialization.jsonObject(with: Data(ok.stdout.utf8)) as? [[String: Any]])
        #expect(slices.map { $0["arch"] as? String } == ["x86_64", "arm64"])
        for slice in slices {
            #expect(slice["signed"] as? Bool == true && slice["valid"] as? Bool == true)
            #expect((slice["cdhash"] as? String)?.count == 40)
            #expect(slice["page_size"] as? Int == 4096 && (slice["pages"] as? Int ?? 0) > 0)
            #expect((slice["bad_pages"] as? [Int]) == [])
        }
        let one = try await Dyld3Binary.run(["codesign", "verify", "--arch", "arm64", valid])
        #expect(one.status == 0 && one.lines.count == 1 && one.stdout.contains("(arm64): valid, cdhash "))

        #expect(try await Dyld3Binary.run(["codesign", "verify", unsigned]).status == 2)
        #expect(try await Dyld3Binary.run(["codesign", "verify", valid, unsigned]).status == 2)

        let bad = try await Dyld3Binary.run(["codesign", "verify", "--json", damaged, unsigned])
        #expect(bad.status == 3)
        let badSlices = try #require(try JSONSerialization.jsonObject(with: Data(bad.stdout.utf8)) as? [[String: Any]])
        #expect(badSlices.first?["bad_pages"] as? [Int] == [try #require(manifest["bad_page"] as? Int)])
        #expect(badSlices.first?["valid"] as? Bool == false && badSlices.last?["signed"] as? Bool == false)

        let text = try await Dyld3Binary.run(["codesign", "verify", damaged])
        let page = try #require(manifest["bad_page"] as? Int)
        #expect(text.status == 3)
        #expect(text.lines.contains("\(damaged) (x86_64): CodeDirectory: page \(page) (file offset 0x\(String(page * 4096, radix: 16)), 4096 bytes) does not match its hash"))

        let notMachO = Self.signedRoot.appendingPathComponent("damaged/manifest.json").path
        let unreadable = try await Dyld3Binary.run(["codesign", "verify", notMachO, valid])
        #expect(unreadable.status == 1 && unreadable.lines.count == 2)
        #expect(unreadable.stderr.split(separator: "\n").count == 1 && unreadable.stderr.contains("\(notMachO): offset 0x0"))

        let truncated = Self.signedRoot.appendingPathComponent("damaged/x86_64-chained-app.truncated-superblob").path
        let refused = try await Dyld3Binary.run(["codesign", "verify", truncated])
        #expect(refused.status == 3)
        #expect(refused.lines.count == 2 && refused.lines[1].hasPrefix("\(truncated): offset 0x"))
    }

    /// `inspect --code-signature` prints what the reader read, text and JSON.
    @Test func inspectPrintsTheSignature() async throws {
        let path = Self.signedPath("arm64-opcodes-app")
        let signature = try #require(try CodeSignature.read(from: try MachOImage(parsing: try Corpus.bytes(path))))
        let text = try await Dyld3Binary.run(["inspect", "--code-signature", path])
        #expect(text.status == 0)
        #expect(text.lines.contains { $0.contains("cdhash") && $0.hasSuffix(signature.cdHash.hex) })
        #expect(text.lines.contains { $0.contains("identifier") && $0.hasSuffix(" app") })
        let json = try await Dyld3Binary.run(["inspect", "--code-signature", "--json", path])
        let root = try #require(json.json)
        let slice = try #require((root["slices"] as? [[String: Any]])?.first)
        let member = try #require(slice["code_signature"] as? [String: Any])
        #expect(member["cdhash"] as? String == signature.cdHash.hex)
        let unsigned = try await Dyld3Binary.run(["inspect", "--code-signature", Paths.readerFixtures.appendingPathComponent("arm64-chained/app").path])
        #expect(unsigned.status == 0 && unsigned.lines.last == "Code signature: none")
    }
}
