import MachOReader
import LaunchPlan

/// The signature check dyld2 makes before an image's code can run, and install makes before
/// it writes a closure: a signed image must verify whole (every CodeDirectory's page hashes
/// and every special slot checkable from the file); an unsigned one loads (macOS x86_64's rule).
package enum CodeSigning {
    /// Nil when `image` is unsigned, its identity when it verifies; else the first problem.
    package static func verify(_ image: MachOImage, path: String) throws(LoadError) -> SignedImage? {
        let signature: CodeSignature?
        do {
            signature = try CodeSignature.read(from: image)
        } catch {
            throw .codeSignature(path: path, .unreadable(error))
        }
        guard let signature else { return nil }
        let check = CodeSignatureCheck(signature, image: image)
        for (result, directory) in zip(check.directories, signature.codeDirectories) {
            if let page = result.badPages.first {
                let range = directory.pageRange(page)
                throw .codeSignature(path: path, .page(directory: directory.structure, page: page,
                                                       fileOffset: UInt64(check.imageOffset + range.lowerBound), size: range.count))
            }
            if let slot = result.specialSlots.first(where: { $0.status != .valid }) {
                let what = switch slot.status {
                case .mismatch: "does not match its special slot"
                case .missing: "is sealed by its special slot but absent"
                case .unsealed, .valid: "is present but no special slot seals it"
                }
                throw .codeSignature(path: path, .specialSlot(directory: directory.structure, blob: slot.name, what: what))
            }
        }
        let best = signature.bestCodeDirectory
        return SignedImage(cdHash: best.cdHash, hashType: best.hashType, codeDirectoryOffset: UInt64(best.blob.base),
                           codeDirectorySize: best.blob.count, teamID: best.teamID, platform: best.platform)
    }
}
