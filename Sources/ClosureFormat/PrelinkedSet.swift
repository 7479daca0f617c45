import LaunchPlan
import MachOReader

/// A prelinked image set (docs/prelinked.md): every image of one launch laid out in one range
/// as the per-image launch lays them out (load order, page-aligned, no guard pages), copied into
/// one file with every fixup applied for one base address. What a launch has left is in
/// ``closure`` (the app's closure without its fixup runs) and in the slide runs: every word
/// holding an address in the range, as rebase runs over the range read as one image, with their
/// page index. Sliding the set stores each again for the range's new base.
///
/// A set whose closure binds into the shared cache holds only the app's own images: the cached
/// ones lie in the cache's range, and the closure keeps the runs a launch writes once the cache
/// is mapped (the own images' binds into cached images, the cached images' patches, the
/// Objective-C writes).
package struct PrelinkedSet: Equatable, Sendable {
    /// The set file format version (the header's).
    package static let formatVersion: UInt32 = 3
    /// Where the data starts in the file: a multiple of every page size a host may have.
    package static let dataAlignment: UInt64 = 16384

    /// The app's closure without fixup runs (their writes are in the data already).
    package var closure: LaunchClosure
    /// The address the data was fixed up for: where the range starts (image 0's region).
    package var base: UInt64
    /// The host page size the layout was made for.
    package var pageSize: UInt64
    /// Bytes of the range (and of the data): every image, each rounded up to whole pages.
    package var rangeSize: UInt64
    /// Per image: where its preferred base lies in the range.
    package var imageOffsets: [UInt64]
    /// Rebase runs whose locations and targets are offsets from the range's start.
    package var slideRuns: ArraySlice<UInt8>
    package var slideCount: Int
    package var slidePageIndex: FixupPageIndex

    package init(closure: LaunchClosure, base: UInt64, pageSize: UInt64, rangeSize: UInt64, imageOffsets: [UInt64],
                slideRuns: ArraySlice<UInt8>, slideCount: Int, slidePageIndex: FixupPageIndex) {
        (self.closure, self.base, self.pageSize, self.rangeSize, self.imageOffsets) = (closure, base, pageSize, rangeSize, imageOffsets)
        (self.slideRuns, self.slideCount, self.slidePageIndex) = (slideRuns, slideCount, slidePageIndex)
    }

    /// The whole range read as one image: every segment of every image at its offset in the
    /// range, named `image-index/segment`. Made on each use: keep it rather than ask twice.
    package var rangePlan: ImagePlan {
        var segments: [SegmentPlan] = []
        for (index, image) in closure.images.enumerated() where image.cacheSlot == nil {
            for segment in image.plan.segments {
                var moved = segment
                moved.vmOffset += imageOffsets[index]
                moved.name = "\(index)/\(segment.name)"
                segments.append(moved)
            }
        }
        return ImagePlan(path: "prelinked set", preferredBase: base, vmSize: rangeSize, segments: segments)
    }

    /// Checks every slide run and page before anything is written (a page-in launch, `verify`):
    /// each run inside one writable segment, each target inside the range, each indexed page
    /// inside a writable segment.
    package func checkSlideRuns(path: String) throws(ClosureError) {
        let writable = WritableRanges(rangePlan)
        do throws(FixupFault) {
            try FixupRunWalk(slideRuns).rebases(within: writable, imageSize: rangeSize, run: { _, _, _ in }, rebase: { _, _, _ in })
        } catch {
            throw .fixups(path: path, image: "the prelinked range", stream: .rebases, fault: error)
        }
        let index = try slidePageIndex.pages(path: path)
        for page in index.pages {
            let (start, overflow) = page.page.multipliedReportingOverflow(by: index.pageSize)
            guard !overflow, writable.accepts(start) else {
                throw .corrupt(path: path, offset: 0, what: "the slide page index names page \(page.page), outside every writable segment of the range")
            }
        }
    }

    /// Whether the closure binds into the shared cache (its cached images are not in the range).
    package var bindsIntoSharedCache: Bool { closure.sharedCache != nil }

    /// The closure with its fixup runs taken out: what a set keeps of it.
    package static func stripped(_ closure: LaunchClosure) -> LaunchClosure {
        var stripped = closure
        stripped.images = closure.images.map { $0.withoutFixups() }
        stripped.objc.bindRuns = stripped.objc.bindRuns.map { _ in [] }
        stripped.objc.bindCounts = stripped.objc.bindCounts.map { _ in 0 }
        stripped.bindTargets = BindTargetTable([])
        return stripped
    }

    /// The closure's body (a blob), base, page size, range size, image offsets, slide count and runs, page index.
    func encodedMetadata() -> [UInt8] {
        var w = ClosureWriter()
        w.blob(closure.encodedBody()[...])
        w.u64(base)
        for value in [pageSize, rangeSize, UInt64(imageOffsets.count)] + imageOffsets + [UInt64(slideCount)] { w.uleb(value) }
        w.blob(slideRuns)
        w.blob(slidePageIndex.bytes)
        return w.bytes
    }

    /// Decodes and checks the metadata: the closure's own checks, then the layout (every
    /// image page-aligned, inside the range, after the one before it).
    init(parsingMetadata bytes: [UInt8], path: String) throws(ClosureError) {
        var r = ClosureReader(bytes, path: path)
        let body = try r.blob()
        closure = try LaunchClosure(parsingBody: Array(body), path: path)
        base = try r.u64()
        pageSize = try r.uleb()
        rangeSize = try r.uleb()
        guard pageSize >= 4096, pageSize <= PrelinkedSet.dataAlignment, pageSize & (pageSize - 1) == 0 else {
            throw r.corrupt("page size \(pageSize) is not a power of two from 4096 to \(PrelinkedSet.dataAlignment)")
        }
        guard base % pageSize == 0, rangeSize % pageSize == 0 else {
            throw r.corrupt("base \(hex(base)) or range size \(rangeSize) is not page-aligned")
        }
        let count = try r.count(of: "image offset")
        guard count == closure.images.count else {
            throw r.corrupt("\(count) image offsets for \(closure.images.count) images")
        }
        // Each segment gets its own protection, page by page: it must start on a page. The
        // range is read after the launch (the digest, compare): a segment written there must
        // stay readable.
        for image in closure.images where image.cacheSlot == nil {
            for segment in image.plan.segments {
                guard segment.vmOffset % pageSize == 0 else {
                    throw r.corrupt("segment \(segment.name) of \(image.path) does not start on a \(pageSize)-byte page")
                }
                guard !segment.isWritable || segment.protection.contains(.read) else {
                    throw r.corrupt("segment \(segment.name) of \(image.path) is written but not readable")
                }
            }
        }
        imageOffsets = []
        var end: UInt64 = 0
        for index in 0..<count {
            let offset = try r.uleb()
            // A cached image lies in the cache's range: its offset is where it would come.
            let size = closure.images[index].cacheSlot == nil ? closure.images[index].plan.vmSize : 0
            guard offset % pageSize == 0, offset >= end, offset <= rangeSize, size <= rangeSize - offset else {
                throw r.corrupt("image \(index) (\(closure.images[index].path)) at +\(hex(offset)), \(size) bytes, "
                    + "is not page-aligned inside the \(rangeSize)-byte range after the image before it")
            }
            imageOffsets.append(offset)
            end = offset + size
        }
        slideCount = try r.int("slide count")
        slideRuns = try r.blob()
        // The page index is checked where it is used: a page-in launch and `verify`.
        slidePageIndex = FixupPageIndex(bytes: try r.blob())
        guard r.atEnd else { throw r.corrupt("bytes after the set's metadata") }
    }
}

/// The set file: a 64-byte ``PrelinkedSetHeader``, the metadata (not compressed: it is read at
/// every launch), a signed set's ``PrelinkedSetSignature``, zeros up to
/// ``PrelinkedSet/dataAlignment``, then the data, mapped as it lies.
package enum PrelinkedSetFile {
    /// The file's bytes (`data.count` is the range's size).
    package static func encode(_ set: PrelinkedSet, data: [UInt8], signedWith signer: ClosureSigningKey? = nil) -> [UInt8] {
        let metadata = set.encodedMetadata()
        let alignment = PrelinkedSet.dataAlignment
        let signatureSize = signer == nil ? 0 : PrelinkedSetSignature.size
        let dataOffset = (UInt64(PrelinkedSetHeader.size + metadata.count + signatureSize) + alignment - 1) / alignment * alignment
        let header = PrelinkedSetHeader(metadataSize: UInt64(metadata.count), dataOffset: dataOffset, dataSize: UInt64(data.count),
                                        dataHash: UnsafeHash.xxh3(data[...]), flags: signer == nil ? 0 : PrelinkedSetHeader.signedFlag)
        var file = header.bytes(metadata: metadata)
        if let signer {
            file += UnsafeDigest.sha256(data)
            file += signer.signature(for: file[...])
        }
        file += [UInt8](repeating: 0, count: Int(dataOffset) - file.count)
        file += data
        return file
    }

    /// Checks the header against `fileSize`, with `trustKey` the signature block, and decodes
    /// the metadata. `prefix` holds the file's first bytes, at least up to the data. The data
    /// is not read: ``checkData(_:header:path:)`` checks it (`verify`, `--hash-images`, `--trust`).
    /// `sharedCache`: called with the shared cache the set's closure binds into, once the
    /// header (and signature) hold, before the closure's image records are decoded.
    package static func decode(prefix: ByteView, fileSize: UInt64, path: String, trusting trustKey: ClosureTrustKey? = nil,
                              sharedCache: ((ClosureSharedCache) throws(ClosureError) -> Void)? = nil)
        throws(ClosureError) -> (header: PrelinkedSetHeader, set: PrelinkedSet) {
        var header = try PrelinkedSetHeader(parsing: prefix, fileSize: fileSize, path: path)
        guard let metadata = try? prefix.bytes(PrelinkedSetHeader.size, Int(header.metadataSize)) else {
            throw .corrupt(path: path, offset: PrelinkedSetHeader.size, what: "the metadata runs past the file")
        }
        if let trustKey {
            header.signature = try PrelinkedSetSignature(prefix: prefix, header: header, trusting: trustKey, path: path)
        }
        if let sharedCache {
            var r = ClosureReader(metadata, path: path)
            if let cache = try LaunchClosure.readImageIndex(Array(try r.blob()), path: path).sharedCache { try sharedCache(cache) }
        }
        let set = try PrelinkedSet(parsingMetadata: metadata, path: path)
        guard header.dataSize == set.rangeSize else {
            throw .corrupt(path: path, offset: 40, what: "\(header.dataSize) bytes of data for a \(set.rangeSize)-byte range")
        }
        return (header, set)
    }

    /// Checks the data against the signed SHA-256 when the header was checked with a trusted
    /// key, else against the header's xxh3.
    package static func checkData(_ data: ByteView, header: PrelinkedSetHeader, path: String) throws(ClosureError) {
        guard data.count == Int(header.dataSize) else {
            throw .corrupt(path: path, offset: Int(header.dataOffset), what: "\(data.count) bytes of data where the header records \(header.dataSize) (truncated)")
        }
        if let signature = header.signature {
            guard UnsafeDigest.sha256(data) == signature.dataDigest else {
                throw .corrupt(path: path, offset: Int(header.dataOffset), what: "the data's SHA-256 is not the signed one (changed since it was signed)")
            }
        } else if UnsafeHash.xxh3(data) != header.dataHash {
            throw .corrupt(path: path, offset: Int(header.dataOffset), what: "the data's hash is not the one the header records (changed or truncated)")
        }
    }
}

/// A signed set's signature block, right after the metadata: the SHA-256 of the data
/// (32 bytes), then the 64-byte Ed25519 signature (``ClosureSigningKey``) of every byte
/// before it (header, metadata, data digest). The header's checksum covers neither; the
/// signature covers the header, so its signed flag cannot be cleared unnoticed by a
/// trusting reader, which refuses an unsigned set.
package struct PrelinkedSetSignature: Equatable, Sendable {
    package static let size = UnsafeDigest.sha256Size + ClosureFileHeader.signatureLength
    /// The SHA-256 of the data, as signed.
    package let dataDigest: [UInt8]

    init(prefix: ByteView, header: PrelinkedSetHeader, trusting trustKey: ClosureTrustKey, path: String) throws(ClosureError) {
        guard header.flags & PrelinkedSetHeader.signedFlag != 0 else {
            throw .untrusted(path: path, what: "is not signed, and --trust accepts only prelinked sets signed by its key (install --prelink --sign KEY)")
        }
        let start = PrelinkedSetHeader.size + Int(header.metadataSize)
        guard let signed = try? prefix.bytes(0, start + UnsafeDigest.sha256Size),
              let signature = try? prefix.bytes(start + UnsafeDigest.sha256Size, ClosureFileHeader.signatureLength) else {
            throw .corrupt(path: path, offset: start, what: "the signature block runs past the file")
        }
        guard trustKey.isValidSignature(signature[...], for: signed[...]) else {
            throw .untrusted(path: path, what: "its signature does not verify with the trusted key (signed by another key, or changed since)")
        }
        dataDigest = Array(signed[start...])
    }
}

/// The 64-byte header of a set file, field by field (docs/prelinked.md).
///
///     0  magic "DYLD3PS\0"
///     8  checksum: xxh3-64 of every byte from offset 16 to the end of the metadata
///    16  format version (u32)     20  flags (u32; bit 1: signed, ``PrelinkedSetSignature``)
///    24  metadata size (u64)      32  data offset (u64)
///    40  data size (u64)          48  data hash: xxh3-64 of the data (u64)
///    56  reserved (u64, 0)
package struct PrelinkedSetHeader: Equatable, Sendable {
    package static let magic: [UInt8] = Array("DYLD3PS\u{0}".utf8)
    package static let size = 64
    /// No metadata comes near this (a few hundred bytes per image).
    package static let maxMetadataSize: UInt64 = 64 << 20
    /// The flag of a signed set (the closure file's bit).
    package static let signedFlag = ClosureFileHeader.signedFlag

    package let checksum: UInt64
    package let version: UInt32
    package let flags: UInt32
    package let metadataSize: UInt64
    package let dataOffset: UInt64
    package let dataSize: UInt64
    package let dataHash: UInt64
    /// The checked signature block, when the header was read trusting a key.
    package internal(set) var signature: PrelinkedSetSignature?

    init(metadataSize: UInt64, dataOffset: UInt64, dataSize: UInt64, dataHash: UInt64, flags: UInt32) {
        checksum = 0
        version = PrelinkedSet.formatVersion
        (self.flags, self.metadataSize, self.dataOffset, self.dataSize, self.dataHash) = (flags, metadataSize, dataOffset, dataSize, dataHash)
    }

    /// Bytes of the signature block after the metadata.
    package var signatureSize: Int { flags & Self.signedFlag != 0 ? PrelinkedSetSignature.size : 0 }

    /// Reads the header from `prefix` (the file's first bytes) and checks it against the
    /// file's size: magic, version, checksum, the metadata before the data, the data
    /// aligned and ending at the file's end.
    package init(parsing prefix: ByteView, fileSize: UInt64, path: String) throws(ClosureError) {
        guard prefix.count >= Self.size, let fields = try? prefix.bytes(0, Self.size) else {
            throw .corrupt(path: path, offset: prefix.count, what: "\(prefix.count) bytes is shorter than the \(Self.size)-byte header of a prelinked set")
        }
        guard Array(fields[0..<8]) == Self.magic else { throw .corrupt(path: path, offset: 0, what: "not a prelinked set (bad magic)") }
        let word = fields.littleEndianWord
        (checksum, version, flags) = fields.checksumVersionAndFlags
        metadataSize = word(24)
        dataOffset = word(32)
        dataSize = word(40)
        dataHash = word(48)
        guard metadataSize <= Self.maxMetadataSize, UInt64(Self.size) + metadataSize + UInt64(signatureSize) <= dataOffset,
              dataOffset % PrelinkedSet.dataAlignment == 0, dataOffset <= fileSize, fileSize - dataOffset == dataSize else {
            throw .corrupt(path: path, offset: 24, what: "metadata of \(metadataSize) bytes, data of \(dataSize) bytes at offset \(dataOffset) "
                + "do not fit the file's \(fileSize) bytes (truncated or damaged)")
        }
        guard let checked = try? prefix.slice(16, Self.size - 16 + Int(metadataSize)), UnsafeHash.xxh3(checked) == checksum else {
            throw .corrupt(path: path, offset: 8, what: "checksum mismatch")
        }
        guard version == PrelinkedSet.formatVersion else {
            throw .incompatible(path: path, what: "prelinked set format version \(version), this loader reads \(PrelinkedSet.formatVersion)")
        }
        guard flags & ~Self.signedFlag == 0, word(56) == 0 else { throw .corrupt(path: path, offset: 20, what: "unknown flags or reserved bits") }
    }

    /// The metadata size (with a signed set's signature block) the first bytes declare,
    /// unchecked (0 when too short): how much a reader reads after the header before checking.
    package static func declaredMetadataSize(_ fields: [UInt8]) -> UInt64 {
        guard fields.count >= 32 else { return 0 }
        let size = fields.littleEndianWord(24)
        let signed = fields[20] & UInt8(truncatingIfNeeded: signedFlag) != 0
        return size.addingReportingOverflow(signed ? UInt64(PrelinkedSetSignature.size) : 0).partialValue
    }

    /// The header, its checksum computed over it and `metadata`, followed by `metadata`.
    func bytes(metadata: [UInt8]) -> [UInt8] {
        var w = ClosureWriter()
        for field in [UInt64(version) | UInt64(flags) << 32, metadataSize, dataOffset, dataSize, dataHash, 0] { w.u64(field) }
        return w.checksummed(magic: Self.magic, payload: metadata)
    }
}
