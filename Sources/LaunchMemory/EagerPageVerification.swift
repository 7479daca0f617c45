import MachOReader
import LaunchPlan
import LoaderSystem

/// `--verify-pages`: every mapped page of each signed image hashed against its code slot after
/// the mapping and before any fixup, as the kernel would check each page on its first fault
/// (docs/code-signing.md, "Eager page verification"). The CodeDirectory, read from the mapped
/// `__LINKEDIT`, must hash to the cdHash the closure recorded (and the identity check
/// compared). Pages page-in registered are skipped: its pager verifies each as it fills it.
package enum EagerPageVerification {
    /// The pages checked and their bytes, for the report and the bench.
    package struct Counts: Sendable, Equatable {
        package var pages = 0
        package var bytes = 0
    }

    /// Checks every signed image of `memory` (`signatures` in load order, nil: unsigned). The
    /// first page that does not match, or a CodeDirectory no longer the one identified, is
    /// thrown as the image's code-signature error.
    package static func verify(_ memory: LaunchMemory, signatures: [SignedImage?]) throws(LoadError) -> Counts {
        var counts = Counts()
        for (index, signature) in signatures.enumerated() where index < memory.images.count {
            guard let signature else { continue }
            try verify(memory, image: index, signature: signature, counts: &counts)
        }
        return counts
    }

    static func verify(_ memory: LaunchMemory, image index: Int, signature: SignedImage, counts: inout Counts) throws(LoadError) {
        let image = memory.images[index]
        let path = image.plan.path
        let segments = image.plan.segments
        let sliceOffset = segments.first { $0.name == "__TEXT" }?.fileOffset ?? 0
        let pagedRanges = memory.pagedRanges(ofImage: index)
        // The mapped bytes at absolute file offset `offset`, `count` long, inside one
        // readable segment's file bytes that page-in does not fill: its vm offset.
        func vmOffset(fileOffset offset: UInt64, count: Int) -> UInt64? {
            for (number, segment) in segments.enumerated() where segment.protection.contains(.read) {
                guard offset >= segment.fileOffset, offset - segment.fileOffset < segment.fileSize else { continue }
                let into = offset - segment.fileOffset
                guard UInt64(count) <= segment.fileSize - into else { return nil }
                let vm = segment.vmOffset + into
                let paged = number < memory.deferred[index].count && memory.deferred[index][number]
                    || number < pagedRanges.count && pagedRanges[number].contains { $0.overlaps(vm..<vm + UInt64(count)) }
                return paged ? nil : vm
            }
            return nil
        }
        let changed = LoadError.codeSignature(path: path, .changed(recorded: signature.cdHash, now: nil))
        guard let directoryOffset = vmOffset(fileOffset: signature.codeDirectoryOffset, count: signature.codeDirectorySize),
              let blob = memory.mappedFileBytes(image: index, vmOffset: directoryOffset, count: signature.codeDirectorySize) else {
            throw changed
        }
        let view = ByteView(blob)
        let now = signature.hashType.cdHash(of: view)
        guard now == signature.cdHash else { throw .codeSignature(path: path, .changed(recorded: signature.cdHash, now: now)) }
        let directory: CS_CodeDirectory
        do {
            directory = try CS_CodeDirectory(parsing: view, slot: 0)
        } catch {
            throw .codeSignature(path: path, .unreadable(error))
        }
        for slot in 0..<directory.pageCount {
            let range = directory.pageRange(slot)
            let fileOffset = sliceOffset + UInt64(range.lowerBound)
            // A slot no readable segment maps whole is not in memory: nothing runs from it.
            guard let vm = vmOffset(fileOffset: fileOffset, count: range.count) else { continue }
            guard UnsafeMemory.verifyPage(address: image.base + vm, count: range.count, against: directory, slot: slot) else {
                throw .codeSignature(path: path, .page(directory: directory.structure, page: slot, fileOffset: fileOffset, size: range.count))
            }
            counts.pages += 1
            counts.bytes += range.count
        }
    }
}
