import LaunchPlan
import MachOReader

/// How an image on disk is recognized as the one the closure was built from.
///
/// Encoding: `size` ULEB, `mtimeSeconds` SLEB, `mtimeNanoseconds` ULEB, `inode` ULEB,
/// `ctimeSeconds` SLEB, `ctimeNanoseconds` ULEB, UUID flag byte (+16 bytes), `contentHash` u64,
/// signature flag byte (+ CodeDirectory offset ULEB, size ULEB, hash type u8, cdHash 20 bytes,
/// team ID string, "" for none, platform u8).
package struct ImageIdentity: Equatable, Sendable {
    package var size: UInt64
    /// Modification time and inode: 0 in content-only closures (caches that travel).
    package var mtimeSeconds: Int64
    package var mtimeNanoseconds: UInt64
    package var inode: UInt64
    /// Status-change time (0 in content-only closures): `utimes` cannot set it back.
    package var ctimeSeconds: Int64
    package var ctimeNanoseconds: UInt64
    package var uuid: [UInt8]?
    /// xxh3-64 of the whole file.
    package var contentHash: UInt64
    /// A signed image's best CodeDirectory: its cdHash, and where the blob is in the file.
    package var signature: SignedImage?

    package init(size: UInt64, mtimeSeconds: Int64, mtimeNanoseconds: UInt64, inode: UInt64,
                ctimeSeconds: Int64 = 0, ctimeNanoseconds: UInt64 = 0, uuid: [UInt8]?, contentHash: UInt64, signature: SignedImage? = nil) {
        (self.size, self.mtimeSeconds, self.mtimeNanoseconds, self.inode) = (size, mtimeSeconds, mtimeNanoseconds, inode)
        (self.ctimeSeconds, self.ctimeNanoseconds, self.uuid, self.contentHash) = (ctimeSeconds, ctimeNanoseconds, uuid, contentHash)
        self.signature = signature
    }

    init(parsing r: inout ClosureReader) throws(ClosureError) {
        size = try r.uleb()
        mtimeSeconds = try r.sleb()
        mtimeNanoseconds = try r.uleb()
        inode = try r.uleb()
        ctimeSeconds = try r.sleb()
        ctimeNanoseconds = try r.uleb()
        uuid = try r.u8() != 0 ? try r.raw(16) : nil
        contentHash = try r.u64()
        if try r.u8() != 0 {
            let offset = try r.uleb(), size = try r.uleb(), type = try r.u8(), hash = try r.raw(20)
            let team = try r.string(), platform = try r.u8()
            guard let hashType = CSHashType(rawValue: type), let cdHash = CDHash(bytes: hash), size <= UInt64(Int32.max) else {
                throw r.corrupt("a code signature record with hash type \(type), size \(size)")
            }
            signature = SignedImage(cdHash: cdHash, hashType: hashType, codeDirectoryOffset: offset, codeDirectorySize: Int(size),
                                    teamID: team.isEmpty ? nil : team, platform: platform)
        } else {
            signature = nil
        }
    }

    func encode(into w: inout ClosureWriter) {
        w.uleb(size)
        w.sleb(mtimeSeconds)
        w.uleb(mtimeNanoseconds)
        w.uleb(inode)
        w.sleb(ctimeSeconds)
        w.uleb(ctimeNanoseconds)
        if let uuid { w.u8(1); for byte in uuid { w.u8(byte) } } else { w.u8(0) }
        w.u64(contentHash)
        if let signature {
            w.u8(1)
            w.uleb(signature.codeDirectoryOffset)
            w.uleb(UInt64(signature.codeDirectorySize))
            w.u8(signature.hashType.rawValue)
            for byte in signature.cdHash.bytes { w.u8(byte) }
            w.string(signature.teamID ?? "")
            w.u8(signature.platform)
        } else {
            w.u8(0)
        }
    }
}
