import ClosureCache
import Crypto
import Foundation
import LoaderCore
import LoaderSystem
import MachOReader

/// `dyld3 shared-cache verify`: whether a cache can be trusted and is still its root's.
/// Corrupt: its tables do not read, a slide chain leaves its page or points outside the cache,
/// or its bytes no longer hash to its UUID (which the builder made from them). Untrusted: it, or
/// its directory, is owned or writable by another user (the closures' rule). Stale: a source
/// dylib of the root changed since the build (inode or modification time).
package struct SharedCacheVerification: Sendable {
    package enum Status: String, Sendable { case valid, stale, corrupt, untrusted }

    package let path: String
    package let status: Status
    package let problems: [String]
    package let images: Int

    /// Whether `bytes` hash to `uuid` as the builder made it: the first 16 bytes of the SHA-256
    /// of the file with the UUID's own bytes (88..<104) zero.
    package static func contentMatchesUUID(_ bytes: ByteView, uuid: [UInt8]) -> Bool {
        guard bytes.count >= 104, let head = try? bytes.bytes(0, 88) else { return false }
        var hasher = SHA256()
        hasher.update(data: head + [UInt8](repeating: 0, count: 16))
        // The rest a megabyte at a time: a cache's size is never copied whole.
        var offset = 104
        while offset < bytes.count {
            let count = min(1 << 20, bytes.count - offset)
            guard let chunk = try? bytes.bytes(offset, count) else { return false }
            hasher.update(data: chunk)
            offset += count
        }
        return Array(hasher.finalize().prefix(16)) == uuid
    }

    package init(cache path: String, root: String?) {
        self.path = path
        guard let file = FileStatus.of(path), let directory = FileStatus.of((path as NSString).deletingLastPathComponent) else {
            (status, problems, images) = (.corrupt, ["\(path): cannot be read"], 0)
            return
        }
        if let problem = ClosureOwnership.check(file: file, directory: directory, user: UnsafeFileIO.effectiveUserID) {
            (status, problems, images) = (.untrusted, ["\(path): untrusted: \(problem)"], 0)
            return
        }
        let cache: DyldCacheFile
        do {
            cache = try DyldCacheFile(parsing: try ImageFile.mapRegularFile(path))
        } catch {
            (status, problems, images) = (.corrupt, ["\(path): corrupt: \(error)"], 0)
            return
        }
        images = cache.images.count
        var corrupt: [String] = []
        if !Self.contentMatchesUUID(cache.view, uuid: cache.header.uuid) {
            corrupt.append("\(path): corrupt: its bytes do not hash to its UUID (changed since it was built)")
        }
        let start = cache.header.sharedRegionStart, end = start &+ cache.header.sharedRegionSize
        for (index, mapping) in cache.mappings.enumerated() where corrupt.isEmpty {
            do {
                var outside: UInt64?
                try cache.forEachSlidLocation(inMapping: index) { offset, pointer in
                    let value = pointer & DyldCache.SlideInfo.addressBits
                    if value != 0, value < start || value >= end, outside == nil { outside = mapping.address + offset }
                }
                if let outside { corrupt.append("\(path): corrupt: the pointer at \(hex(outside)) leaves the cache") }
            } catch {
                corrupt.append("\(path): corrupt: mapping \(index): \(error)")
            }
        }
        guard corrupt.isEmpty else {
            (status, problems) = (.corrupt, corrupt)
            return
        }
        var stale: [String] = []
        if let root {
            for image in cache.images {
                guard let source = FileStatus.of(root + image.path) else {
                    stale.append("\(path): stale: \(image.path) is no longer in \(root)")
                    continue
                }
                if source.inode != image.inode || UInt64(max(0, source.mtimeSeconds)) != image.modTime {
                    stale.append("\(path): stale: \(image.path) changed since the cache was built (inode or modification time)")
                }
            }
        }
        (status, problems) = stale.isEmpty ? (.valid, []) : (.stale, stale)
    }
}
