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
    /// What the fault path checks a filled page against.
    let hashes: PageHashes

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
            hashes = try PageHashes(directory, sliceOffset: sliceOffset)
        } catch {
            throw .codeSignature(path: path, .unreadable(error))
        }
    }

    var sliceOffset: UInt64 { hashes.sliceOffset }

    /// See ``PageHashes/slot(fileOffset:bytes:)``.
    func slot(fileOffset: UInt64, bytes: Int) -> Int? { hashes.slot(fileOffset: fileOffset, bytes: bytes) }

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

/// One signed image's code slots as the fault path checks a filled page against them: plain
/// numbers and the window of the slots' hashes, taken from its CodeDirectory before the
/// region goes live. The fill reads no string, copies no CodeDirectory and hashes in C
/// (``UnsafeUserfault/verify(_:count:against:slot:)``): nothing it does allocates.
struct PageHashes: Sendable {
    /// The CodeDirectory's `hashType` (`kSecCodeSignatureHash*`) and `hashSize`.
    let hashType: UInt8
    let hashSize: Int
    /// The CodeDirectory's page size in bytes (0: the whole code is one page).
    let pageSize: Int
    let pageSizeShift: Int
    let codeLimit: Int
    let codeSlots: Int
    /// The code slots' hashes, `codeSlots * hashSize` bytes, slot 0 first.
    let slots: ByteView
    /// Where the image's slice starts in the file: code slots count from there.
    let sliceOffset: UInt64

    init(_ directory: CS_CodeDirectory, sliceOffset: UInt64) throws(MachOError) {
        hashType = directory.hashType.rawValue
        hashSize = Int(directory.hashSize)
        pageSize = directory.pageSize
        pageSizeShift = Int(directory.pageSizeShift)
        codeLimit = Int(clamping: directory.codeLimit)
        codeSlots = Int(directory.nCodeSlots)
        slots = try directory.blob.slice(Int(directory.hashOffset), codeSlots * hashSize)
        self.sliceOffset = sliceOffset
    }

    /// The bytes code slot `slot` covers (``CS_CodeDirectory/pageRange(_:)``'s count): 0 for a slot out of range.
    @inline(__always)
    func slotBytes(_ slot: Int) -> Int {
        guard slot >= 0, slot < codeSlots else { return 0 }
        guard pageSize != 0 else { return codeLimit }
        let start = slot << pageSizeShift
        return max(0, min(start + pageSize, codeLimit) - start)
    }

    /// The code slot of the page at `fileOffset` when the `bytes` the fault path reads cover it; nil otherwise.
    @inline(__always)
    func slot(fileOffset: UInt64, bytes: Int) -> Int? {
        guard pageSize == Int(UnsafeUserfault.pageSize), fileOffset >= sliceOffset else { return nil }
        let inSlice = fileOffset - sliceOffset
        guard inSlice % UnsafeUserfault.pageSize == 0, inSlice / UnsafeUserfault.pageSize < UInt64(codeSlots) else { return nil }
        let slot = Int(inSlice / UnsafeUserfault.pageSize)
        let count = slotBytes(slot)
        return count > 0 && count <= bytes ? slot : nil
    }

    /// The fault path's check of one staged page, before fixups: the slot whose hash it fails,
    /// or nil (it matches, lies past the code limit, or was checked at registration).
    @inline(__always)
    func failingSlot(_ staging: UnsafeUserfault.StagingPage, fileOffset: UInt64, bytes: Int) -> Int? {
        guard let slot = slot(fileOffset: fileOffset, bytes: bytes) else { return nil }
        return UnsafeUserfault.verify(staging, count: slotBytes(slot), against: self, slot: slot) ? nil : slot
    }
}
