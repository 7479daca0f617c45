/// What checking a signature against its image found: per CodeDirectory, its cdHash, which
/// pages do not match their code slots, and the special slots that could be checked.
package struct CodeSignatureCheck: Sendable {
    /// A special slot's outcome.
    package enum SlotStatus: String, Sendable {
        /// The blob is present and hashes to the slot.
        case valid
        /// The blob is present and does not hash to the slot.
        case mismatch
        /// The slot holds a hash but the signature has no such blob.
        case missing
        /// The blob is present but the CodeDirectory has no (or an empty) slot for it: nothing vouches for it.
        case unsealed
    }

    /// One special slot's check.
    package struct SpecialSlot: Sendable {
        package let slot: UInt32, status: SlotStatus
        package var name: String { CodeSignatureNames.slotName(slot) }
    }

    /// One CodeDirectory's check.
    package struct Directory: Sendable {
        package let slot: UInt32, hashType: CSHashType, cdHash: CDHash, pageSize: Int, pages: Int
        /// Code slots whose page does not hash to them, ascending.
        package let badPages: [Int], specialSlots: [SpecialSlot]
        package var valid: Bool { badPages.isEmpty && specialSlots.allSatisfy { $0.status == .valid } }
    }

    package let directories: [Directory]
    /// The image's offset in its file (a universal file's slice offset).
    package let imageOffset: Int
    /// The cdHash that names the image: the strongest CodeDirectory's.
    package let cdHash: CDHash
    package var valid: Bool { directories.allSatisfy(\.valid) }

    /// Checks every CodeDirectory of `signature` against `image`: every page up to the code
    /// limit (which the signature's reading has checked lies before the signature), and each
    /// blob a special slot can vouch for. A page in a hole of a sparse file (never stored,
    /// read as zeros) is compared with the hash of zeros, computed once, and never touched:
    /// the work is bounded by the bytes the file holds, not the gigabytes a hole can claim.
    package init(_ signature: CodeSignature, image: MachOImage) {
        precondition(!image.isMapped, "page hashes are checked against a file's bytes, not a mapped image's")
        var directories: [Directory] = []
        let holes = image.view.holes(before: Int(clamping: signature.codeDirectories.map(\.codeLimit).max() ?? 0))
        for directory in signature.codeDirectories {
            var bad: [Int] = []
            var zerosDigest: (count: Int, digest: ByteView)?
            var nextHole = 0
            for slot in 0..<directory.pageCount {
                let range = directory.pageRange(slot)
                while nextHole < holes.count, holes[nextHole].upperBound <= range.lowerBound { nextHole += 1 }
                if nextHole < holes.count, holes[nextHole].lowerBound <= range.lowerBound, range.upperBound <= holes[nextHole].upperBound {
                    if zerosDigest?.count != range.count {
                        zerosDigest = (range.count, ByteView(directory.hashType.digestBytes(of: ByteView([UInt8](repeating: 0, count: range.count)))))
                    }
                    if let zeros = zerosDigest?.digest, directory.codeSlotHash(slot)?.sameBytes(as: zeros) != true { bad.append(slot) }
                    continue
                }
                guard let page = try? image.view.slice(range.lowerBound, range.count), directory.verifyPage(page, slot: slot) else {
                    bad.append(slot)
                    continue
                }
            }
            var special: [SpecialSlot] = []
            for type in CodeSignature.checkableSpecialSlots {
                let blob = signature.superBlob.blob(type)
                let hash = directory.specialSlotHash(type)
                let empty = hash?.isAllZero ?? true
                switch (blob, empty) {
                case (nil, true): continue
                case (nil, false): special.append(SpecialSlot(slot: type, status: .missing))
                case (.some, true): special.append(SpecialSlot(slot: type, status: .unsealed))
                case let (blob?, false):
                    special.append(SpecialSlot(slot: type, status: directory.verifySpecialSlot(type, blob: blob.view) ? .valid : .mismatch))
                }
            }
            directories.append(Directory(
                slot: directory.slot, hashType: directory.hashType, cdHash: directory.cdHash, pageSize: directory.pageSize,
                pages: directory.pageCount, badPages: bad, specialSlots: special))
        }
        self.directories = directories
        imageOffset = image.view.base
        cdHash = signature.cdHash
    }

    /// One line per problem: which CodeDirectory, which page (with its file offset) or
    /// which blob.
    package func problems(_ signature: CodeSignature) -> [String] {
        var lines: [String] = []
        for (check, directory) in zip(directories, signature.codeDirectories) {
            let name = directory.structure
            for page in check.badPages {
                let range = directory.pageRange(page)
                lines.append("\(name): page \(page) (file offset \(hex(imageOffset + range.lowerBound)), \(range.count) bytes) does not match its hash")
            }
            for slot in check.specialSlots where slot.status != .valid {
                let what = switch slot.status {
                case .mismatch: "does not match its special slot"
                case .missing: "is sealed by its special slot but absent"
                case .unsealed: "is present but no special slot seals it"
                case .valid: ""
                }
                lines.append("\(name): \(slot.name) blob \(what)")
            }
        }
        return lines
    }
}
