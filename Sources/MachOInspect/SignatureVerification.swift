import MachOReader

/// `dyld3 codesign verify`'s check of one file: for each selected slice, whether it is
/// signed, and if so whether every CodeDirectory's pages and checkable special slots match
/// the file, with the image's cdHash.
package struct SignatureVerification: Sendable {
    /// One slice's outcome.
    package struct Slice: Sendable {
        package let arch: String
        /// The slice's offset in the file.
        package let offset: Int, signed: Bool
        /// The signature could be read and every check passed.
        package let valid: Bool
        /// The strongest CodeDirectory's cdHash (nil when unsigned or unreadable).
        package let cdHash: CDHash?, hashType: CSHashType?, pageSize: Int?, pages: Int?
        /// The strongest CodeDirectory's pages that do not match, ascending.
        package let badPages: [Int]
        /// Every CodeDirectory's check (empty when unsigned or unreadable).
        package let directories: [CodeSignatureCheck.Directory]
        /// One line per problem found (a bad page with its file offset, a bad blob).
        package let problems: [String]
        /// Why the signature could not be read, if it could not.
        package let error: MachOError?
    }

    package let path: String, slices: [Slice]

    /// Checks the slices `arch` selects of the file at `path` (its bytes in `bytes`). A
    /// file that is not a readable Mach-O throws; a damaged signature is a slice's result.
    package init(path: String, file bytes: ByteView, arch: ArchSelection) throws(MachOError) {
        self.path = path
        var slices: [Slice] = []
        try ObjdumpReport.forEachSlice(path: path, file: bytes, arch == .host ? .all : arch) { (_, slice, image, _) throws(MachOError) in
            slices.append(Self.check(image, slice: slice, path: path))
        }
        self.slices = slices
    }

    static func check(_ image: MachOImage, slice: UniversalFile.Slice, path: String) -> Slice {
        let arch = image.header.cpu.name
        func unchecked(signed: Bool, _ error: MachOError?) -> Slice {
            Slice(arch: arch, offset: slice.offset, signed: signed, valid: false, cdHash: nil, hashType: nil, pageSize: nil,
                  pages: nil, badPages: [], directories: [], problems: error.map { [$0.description] } ?? [], error: error)
        }
        let signature: CodeSignature?
        do {
            signature = try CodeSignature.read(from: image)
        } catch {
            return unchecked(signed: true, error.inFile(path))
        }
        guard let signature else { return unchecked(signed: false, nil) }
        let check = CodeSignatureCheck(signature, image: image)
        let best = signature.bestCodeDirectory
        let bestCheck = check.directories.first { $0.slot == best.slot }!
        let problems = check.problems(signature).map { "\(path) (\(arch)): \($0)" }
        return Slice(
            arch: arch, offset: slice.offset, signed: true, valid: check.valid, cdHash: check.cdHash, hashType: best.hashType,
            pageSize: best.pageSize, pages: best.pageCount, badPages: bestCheck.badPages, directories: check.directories,
            problems: problems, error: nil)
    }

    /// One JSON object per slice.
    package func jsonObjects() -> [JSONValue] {
        slices.map { slice in
            var members: [(String, JSONValue)] = [
                ("file", .string(path)), ("arch", .string(slice.arch)), ("offset", .int(Int64(slice.offset))),
                ("signed", .bool(slice.signed)), ("valid", .bool(slice.valid)),
                ("cdhash", slice.cdHash.map { .string($0.hex) } ?? .null),
                ("hash_type", slice.hashType.map { .string($0.description) } ?? .null),
                ("page_size", slice.pageSize.map { .int(Int64($0)) } ?? .null),
                ("pages", slice.pages.map { .int(Int64($0)) } ?? .null),
                ("bad_pages", .array(slice.badPages.map { .int(Int64($0)) })),
            ]
            members.append(("code_directories", .array(slice.directories.map { directory in
                .object([
                    ("slot", .uint(UInt64(directory.slot))), ("hash_type", .string(directory.hashType.description)),
                    ("cdhash", .string(directory.cdHash.hex)), ("page_size", .int(Int64(directory.pageSize))),
                    ("pages", .int(Int64(directory.pages))), ("bad_pages", .array(directory.badPages.map { .int(Int64($0)) })),
                    ("special_slots", .array(directory.specialSlots.map {
                        .object([("slot", .uint(UInt64($0.slot))), ("name", .string($0.name)), ("status", .string($0.status.rawValue))])
                    })),
                    ("valid", .bool(directory.valid)),
                ])
            })))
            members.append(("problems", .array(slice.problems.map(JSONValue.string))))
            members.append(("error", slice.error.map { .object([("offset", .int(Int64($0.offset))), ("structure", .string($0.codeSignature?.structure ?? "")), ("what", .string($0.codeSignature?.what ?? "\($0)"))]) } ?? .null))
            return .object(members)
        }
    }

    /// One line per slice: `PATH (ARCH): valid, cdhash ..., N pages of S bytes (TYPE)`,
    /// `unsigned`, or `INVALID` followed by one line per problem.
    package func textLines() -> [String] {
        slices.flatMap { slice in
            let head = "\(path) (\(slice.arch))"
            guard slice.signed else { return ["\(head): unsigned"] }
            guard slice.valid, let cdHash = slice.cdHash, let type = slice.hashType, let pages = slice.pages, let size = slice.pageSize else {
                return ["\(head): INVALID"] + slice.problems
            }
            return ["\(head): valid, cdhash \(cdHash.hex), \(pages) pages of \(size == 0 ? "the whole code" : "\(size) bytes") (\(type))"]
        }
    }
}
