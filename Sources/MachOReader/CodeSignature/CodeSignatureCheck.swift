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
        package let slot: UInt32
        package let status: SlotStatus
        package var name: String { CodeSignatureNames.slotName(slot) }
    }

    /// One CodeDirectory's check.
    package struct Directory: Sendable {
        package let slot: UInt32
        package let hashType: CSHashType
        package let cdHash: CDHash
        package let pageSize: Int
        package let pages: Int
        /// Code slots whose page does not hash to them, ascending.
        package let badPages: [Int]
        package let specialSlots: [SpecialSlot]
        package var valid: Bool { badPages.isEmpty && specialSlots.allSatisfy { $0.status == .valid } }
    }

    package let directories: [Directory]
    /// The image's offset in its file (a universal file's slice offset).
    package let imageOffset: Int
    /// The cdHash that names the image: the strongest CodeDirectory's.
    package let cdHash: CDHash
    package var valid: Bool { directories.allSatisfy(\.valid) }

    /// Checks every CodeDirectory of `signature` against `image`: every page up to the code
    /// limit (which the signature's reading has checked lies inside the image), and each
    /// blob a special slot can vouch for. The work is one hash of each page per directory,
    /// bounded by the image's size.
    package init(_ signature: CodeSignature, image: MachOImage) {
        var directories: [Directory] = []
        for directory in signature.codeDirectories {
            var bad: [Int] = []
            for slot in 0..<directory.pageCount {
                let range = directory.pageRange(slot)
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
                case (.some, true):
                    special.append(SpecialSlot(slot: type, status: .unsealed))
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
                lines.append("\(name): page \(page) (file offset 0x\(String(imageOffset + range.lowerBound, radix: 16)), \(range.count) bytes) does not match its hash")
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
