import LaunchPlan
import MachOReader

/// The closure file: a 40-byte ``ClosureFileHeader`` and a zstd frame holding the body
/// (``LaunchClosure``'s encoding), or, for a small body, the body stored as it is.
package enum ClosureFile {
    /// No real closure comes near this; a larger declared body is refused unread.
    package static let maxBodySize = 512 << 20

    /// The most a body may expand from its frames. Closures compress 3.3× at most (a
    /// 100-framework app's level-1 frames 1.2×); a body declared larger is repeated bytes or
    /// padding, refused before anything is allocated or decompressed.
    package static let maxExpansion = 64
    /// A body up to this size is accepted whatever its frames' size.
    package static let bodySizeFreeOfExpansionCap = 1 << 20

    /// Bodies of at least this many bytes (≈ 28 frameworks and up) start a launch's second
    /// core, and are written as level-1 frames that decode fast: from there the second core's
    /// share of the work (half the fixups, three quarters of the images opened, the plan
    /// check) outweighs waking it (docs/performance.md, "A second core from a 64 KiB body").
    package static let helperThreshold = 64 * 1024

    /// Bodies under this many bytes (a small app's: 1.7 KiB at 3 images) are stored as they
    /// are. Decoding a frame needs a zstd context, and making one costs a fresh launch about
    /// 15 µs (libzstd reads the CPU's features with three `cpuid`s, each of which traps under a
    /// hypervisor) and its first decompression's page faults, for a few hundred bytes saved
    /// (docs/performance.md, "Small apps and `dlopen`").
    package static let storedBodyLimit = 4096

    /// The file's bytes for a closure: reproducible for the same closure (and key).
    package static func encode(_ closure: LaunchClosure, signedWith signer: ClosureSigningKey? = nil) -> [UInt8] {
        wrapBody(closure.encodedBody(), contentOnlyIdentity: closure.contentOnlyIdentity, signedWith: signer)
    }

    /// A closure file around `body` (also for fuzzing and forgeries whose body checks must fire).
    package static func wrapBody(_ body: [UInt8], contentOnlyIdentity: Bool = false, signedWith signer: ClosureSigningKey? = nil) -> [UInt8] {
        let stored = body.count < storedBodyLimit
        let frame = stored ? body : UnsafeCompression.compress(body)
        let flags = (contentOnlyIdentity ? ClosureFileHeader.contentOnlyIdentityFlag : 0) | (signer != nil ? ClosureFileHeader.signedFlag : 0)
            | (stored ? ClosureFileHeader.storedFlag : 0)
        let header = ClosureFileHeader(version: LaunchClosure.formatVersion, flags: flags,
                                       bodySize: UInt64(body.count), frameSize: UInt64(frame.count))
        var file = header.file(around: frame)
        if let signer { file += signer.signature(for: file[...]) }
        return file
    }

    /// Checks the signature (with `trustKey`: the file must be signed by it), the header, the
    /// checksum and the frame, then decodes and validates the body.
    package static func decode(_ file: [UInt8], path: String, trusting trustKey: ClosureTrustKey? = nil) throws(ClosureError) -> LaunchClosure {
        try decode(ByteView(file), path: path, trusting: trustKey)
    }

    /// ``decode(_:path:trusting:)`` of bytes in place: a mapped file is hashed and decompressed
    /// where it lies (a signature check copies the signed bytes for swift-crypto). One thread;
    /// the fast path runs the same steps on two cores.
    package static func decode(_ file: ByteView, path: String, trusting trustKey: ClosureTrustKey? = nil) throws(ClosureError) -> LaunchClosure {
        let (header, frames) = try checkedFrames(file, path: path, trusting: trustKey)
        guard let body = frames.decompress() else { throw undecodableFrames(header, path: path) }
        let index = try LaunchClosure.readImageIndex(body, path: path)
        let table = index.table(images: try ClosureImage.parse(records: index.records[...], of: body, path: path,
                                                               imageCount: index.records.count))
        let closure = try LaunchClosure(table: table, body: body, tail: index.tail, path: path)
        try checkFlags(header, table, path: path)
        return closure
    }

    /// Everything checked before the body is decompressed: the signature (with `trustKey`),
    /// the header, the declared sizes, and the frames.
    package static func checkedFrames(_ file: ByteView, path: String, trusting trustKey: ClosureTrustKey?) throws(ClosureError)
        -> (header: ClosureFileHeader, frames: ClosureFrames) {
        let header = try ClosureFileHeader(parsing: file, path: path)
        let signed = file.count - header.signatureSize
        if let trustKey {
            guard header.signatureSize > 0 else {
                throw .untrusted(path: path, what: "is not signed, and --trust accepts only closures signed by its key")
            }
            guard let content = try? file.bytes(0, file.count),
                  trustKey.isValidSignature(content[signed...], for: content[..<signed]) else {
                throw .untrusted(path: path, what: "its signature does not verify with the trusted key (signed by another key, or changed since)")
            }
        }
        let (bodySize, frameSize) = (header.bodySize, header.frameSize)
        guard bodySize <= UInt64(maxBodySize) else {
            throw .corrupt(path: path, offset: 24, what: "declared body of \(bodySize) bytes is over the \(maxBodySize)-byte limit")
        }
        guard frameSize == UInt64(signed - ClosureFileHeader.size), let frame = try? file.slice(ClosureFileHeader.size, Int(frameSize)) else {
            throw .corrupt(path: path, offset: 32, what: "frame size \(frameSize) does not match the file (\(signed - ClosureFileHeader.size) bytes)")
        }
        guard bodySize <= UInt64(max(bodySizeFreeOfExpansionCap, Int(frameSize) * maxExpansion)) else {
            throw .corrupt(path: path, offset: 24, what: "declared body of \(bodySize) bytes is more than \(maxExpansion) times its \(frameSize) bytes of frames: "
                + "no closure compresses that well (repeated runs or padding)")
        }
        let stored = header.flags & ClosureFileHeader.storedFlag != 0
        guard !stored || frameSize == bodySize else {
            throw .corrupt(path: path, offset: 24, what: "a stored body of \(bodySize) bytes in \(frameSize) bytes of file (flags bit 2: they must be equal)")
        }
        guard let frames = ClosureFrames(frame, expectedSize: Int(bodySize), stored: stored) else { throw undecodableFrames(header, path: path) }
        return (header, frames)
    }

    /// The error for frames that do not decompress to the declared body.
    package static func undecodableFrames(_ header: ClosureFileHeader, path: String) -> ClosureError {
        .corrupt(path: path, offset: ClosureFileHeader.size,
                 what: "the zstd frames do not decompress to \(header.bodySize) bytes (one frame, or two that fill the data exactly)")
    }

    /// The header's flags must agree with the body read as far as `table`.
    package static func checkFlags(_ header: ClosureFileHeader, _ table: ClosureImageTable, path: String) throws(ClosureError) {
        guard (header.flags & ClosureFileHeader.contentOnlyIdentityFlag != 0) == table.contentOnlyIdentity else {
            throw .corrupt(path: path, offset: 20, what: "the header's content-only flag disagrees with the body")
        }
    }
}

/// The 40-byte header of a closure file (docs/closure-format.md).
///
///     0  magic "DYLD3CL\0"
///     8  checksum: xxh3-64 of every byte from offset 16 to the end of the frame
///    16  format version (u32)     20  flags (u32; bit 0: content-only identity, bit 1: signed,
///                                            bit 2: the body stored, not compressed)
///    24  body size (u64)          32  frame size (u64)
///
/// A signed file ends with a 64-byte Ed25519 signature of every byte before it.
package struct ClosureFileHeader: Equatable, Sendable {
    package static let magic: [UInt8] = Array("DYLD3CL\u{0}".utf8)
    package static let size = 40
    package static let contentOnlyIdentityFlag: UInt32 = 1
    package static let signedFlag: UInt32 = 2
    package static let storedFlag: UInt32 = 4
    package static let signatureLength = 64

    /// Bytes of signature at the end of the file.
    package var signatureSize: Int { flags & Self.signedFlag != 0 ? Self.signatureLength : 0 }

    /// 0 until ``file(around:)`` computes it.
    package let checksum: UInt64
    package let version: UInt32
    package let flags: UInt32
    /// Bytes of the uncompressed body, and of the zstd frame that holds it (the same for a stored body).
    package let bodySize: UInt64
    package let frameSize: UInt64

    package init(version: UInt32, flags: UInt32, bodySize: UInt64, frameSize: UInt64) {
        checksum = 0
        (self.version, self.flags, self.bodySize, self.frameSize) = (version, flags, bodySize, frameSize)
    }

    /// Reads the header of `file` and checks its magic, checksum, version and flags.
    package init(parsing file: ByteView, path: String) throws(ClosureError) {
        guard file.count >= Self.size, let fields = try? file.bytes(0, Self.size) else {
            throw .corrupt(path: path, offset: file.count, what: "\(file.count) bytes is shorter than the \(Self.size)-byte header")
        }
        guard Array(fields[0..<8]) == Self.magic else { throw .corrupt(path: path, offset: 0, what: "not a closure (bad magic)") }
        self.init(fieldsOf: fields)
        guard flags & ~(Self.contentOnlyIdentityFlag | Self.signedFlag | Self.storedFlag) == 0 else {
            throw .corrupt(path: path, offset: 20, what: "unknown header flags \(hex(flags))")
        }
        guard file.count - signatureSize >= Self.size else {
            throw .corrupt(path: path, offset: file.count, what: "\(file.count) bytes cannot hold the header and a signature")
        }
        guard let checked = try? file.slice(16, file.count - signatureSize - 16), UnsafeHash.xxh3(checked) == checksum else {
            throw .corrupt(path: path, offset: 8, what: "checksum mismatch")
        }
        guard version == LaunchClosure.formatVersion else {
            throw .incompatible(path: path, what: "format version \(version), this loader reads \(LaunchClosure.formatVersion)")
        }
    }

    /// The fields of `file`'s first 40 bytes, unchecked (a dump of a decoded file, tests).
    package init(fieldsOf file: [UInt8]) {
        let word = file.littleEndianWord
        (checksum, version, flags) = file.checksumVersionAndFlags
        bodySize = word(24)
        frameSize = word(32)
    }

    /// The whole file: this header, with its checksum computed, followed by `frame`.
    package func file(around frame: [UInt8]) -> [UInt8] {
        var w = ClosureWriter()
        for field in [UInt64(version) | UInt64(flags) << 32, bodySize, frameSize] { w.u64(field) }
        return w.checksummed(magic: Self.magic, payload: frame)
    }
}
