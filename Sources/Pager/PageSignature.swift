import MachOReader
import LaunchPlan
import LoaderSystem

/// A signed image's page hashes as page-in checks them (docs/code-signing.md, "At launch"):
/// its best CodeDirectory, read back through the image's descriptor at its first range and
/// checked against the recorded cdHash. Each filled page's file bytes are hashed against its
/// code slot, as the kernel checks a page it faults in; a page whose slot the filled bytes
/// do not cover exactly (another page size, a slot cut short) is checked at registration.
struct PageSignature: Sendable {
    let directory: CS_CodeDirectory
    /// Where the image's slice starts in the file: code slots count from there.
    let sliceOffset: UInt64

    init(_ signature: SignedImage, of file: ImageDescriptor, sliceOffset: UInt64, path: String) throws(LoadError) {
        let (end, overflow) = signature.codeDirectoryOffset.addingReportingOverflow(UInt64(signature.codeDirectorySize))
        guard !overflow, end <= file.status.size else { throw .codeSignature(path: path, .changed(recorded: signature.cdHash, now: nil)) }
        let blob = ByteView(file.read(offset: signature.codeDirectoryOffset, count: signature.codeDirectorySize))
        let now = signature.hashType.cdHash(of: blob)
        guard blob.count == signature.codeDirectorySize, now == signature.cdHash else {
            throw .codeSignature(path: path, .changed(recorded: signature.cdHash, now: now))
        }
        do {
            directory = try CS_CodeDirectory(parsing: blob, slot: 0)
        } catch {
            throw .codeSignature(path: path, .unreadable(error))
        }
        self.sliceOffset = sliceOffset
    }

    /// The code slot of the page at `fileOffset` when the `bytes` the fault path reads cover it; nil otherwise.
    @inline(__always)
    func slot(fileOffset: UInt64, bytes: Int) -> Int? {
        guard directory.pageSize == Int(UnsafeUserfault.pageSize), fileOffset >= sliceOffset else { return nil }
        let inSlice = fileOffset - sliceOffset
        guard inSlice % UnsafeUserfault.pageSize == 0 else { return nil }
        let slot = Int(inSlice / UnsafeUserfault.pageSize)
        let range = directory.pageRange(slot)
        return !range.isEmpty && range.count <= bytes ? slot : nil
    }

    /// The fault path's check of one staged page, before fixups: the slot whose hash it fails,
    /// or nil (it matches, lies past the code limit, or was checked at registration).
    @inline(__always)
    func failingSlot(_ staging: UnsafeUserfault.StagingPage, fileOffset: UInt64, bytes: Int) -> Int? {
        guard let slot = slot(fileOffset: fileOffset, bytes: bytes) else { return nil }
        return UnsafeUserfault.verify(staging, count: directory.pageRange(slot).count, against: directory, slot: slot) ? nil : slot
    }

    /// Checks now every page of a range whose slot the fault path cannot check; the first failure throws.
    func verifyUncheckable(range: Range<UInt64>, vmOffset: UInt64, fileOffset: UInt64, fileSize: UInt64, of file: ImageDescriptor,
                           image: Int, path: String) throws(LoadError) {
        let page = UnsafeUserfault.pageSize
        var checked = -1
        var inRange: UInt64 = 0
        while inRange < UInt64(range.count), inRange < fileSize {
            let bytes = Int(min(page, fileSize - inRange))
            let offset = fileOffset + inRange
            inRange += page
            guard slot(fileOffset: offset, bytes: bytes) == nil, offset >= sliceOffset else { continue }
            let slot = Int((offset - sliceOffset) >> UInt64(directory.pageSizeShift))
            let slotRange = directory.pageRange(slot)
            guard slot != checked, !slotRange.isEmpty else { continue }
            checked = slot
            let slotBytes = file.read(offset: sliceOffset + UInt64(slotRange.lowerBound), count: slotRange.count)
            guard slotBytes.count == slotRange.count, directory.verifyPage(ByteView(slotBytes), slot: slot) else {
                throw .codeSignature(path: path, .page(directory: directory.structure, page: slot,
                                                       fileOffset: sliceOffset + UInt64(slotRange.lowerBound), size: slotRange.count))
            }
        }
    }
}
