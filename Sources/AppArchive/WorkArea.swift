import Foundation
import MachOReader

/// The directory `.ipa` archives are unpacked into (`CACHE/.work`), opened once as a
/// descriptor and trusted only as the cache is: it is created mode 0700, never followed as
/// a symbolic link, and refused when another user owns it or can write it (``Check``).
///
/// Each unpack extracts into a fresh private directory (`.unpacking-<pid>-<random>`, mode
/// 0700) and publishes it by an atomic rename to a name keyed by the archive's stamp,
/// `ipa-<crc32 of its real path>-<hash of its stamp>-<name>`, with the stamp itself beside
/// it (`….stamp`, written atomically). A published tree is never changed or removed here: a
/// changed archive gets a new tree beside the old one, and a process that loses the rename
/// to another unpacking the same archive uses the winner's tree.
package struct WorkArea {
    /// An opened directory's owner and mode.
    package struct Ownership: Equatable, Sendable {
        package let owner: UInt32, mode: UInt32
    }

    /// Why the work area (`workArea`, as opened) in the cache directory (`cache`) cannot be
    /// trusted, in one line naming what is wrong and the fix; nil when it can.
    package typealias Check = (_ workArea: Ownership, _ cache: Ownership) -> String?

    package let path: String
    private let directory: UnsafeFileAt.Descriptor

    /// Opens the work area at `path` (its parent, the cache directory, is created when
    /// missing), creating it mode 0700 when missing; refuses a symbolic link, anything but
    /// a directory, and what `check` refuses.
    package init(path: String, check: Check) throws(MachOError) {
        self.path = path
        let slash = path.lastIndex(of: "/")
        let parent = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        let leaf = Array((slash.map { String(path[path.index(after: $0)...]) } ?? path).utf8)
        if !UnsafeFoundation.isDirectory(parent) {
            do {
                try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
            } catch {
                throw .io(path: parent, reason: "cannot create the cache directory: \(error.localizedDescription)")
            }
        }
        let cache = try UnsafeFileAt.open(parent, directory: true).get(path: parent, "cannot open the cache directory")
        if let errno = UnsafeFileAt.makeDirectory(leaf, in: cache, mode: 0o700), errno != EEXIST {
            throw .io(path: path, reason: "cannot create the work area: \(UnsafeFileAt.describe(errno))")
        }
        switch UnsafeFileAt.openDirectory(leaf, in: cache) {
        case let .success(opened): directory = opened
        case .failure(ELOOP), .failure(ENOTDIR):
            // O_NOFOLLOW | O_DIRECTORY refuses a link with either, depending on the kernel.
            let what = UnsafeFileAt.linkStatus(leaf, in: cache)?.isSymbolicLink == true ? "a symbolic link, which is never followed" : "not a directory"
            throw .workArea(path: path, what: "the work area is \(what): remove it (it is recreated as a directory)")
        case let .failure(errno): throw .io(path: path, reason: "cannot open the work area: \(UnsafeFileAt.describe(errno))")
        }
        guard case let .success(own) = directory.status(), case let .success(parentStatus) = cache.status() else {
            throw .io(path: path, reason: "cannot examine the work area or its cache directory")
        }
        if let problem = check(Ownership(owner: own.owner, mode: own.mode), Ownership(owner: parentStatus.owner, mode: parentStatus.mode)) {
            throw .workArea(path: path, what: problem)
        }
    }

    /// The `Payload/X.app` of the tree unpacked from `file` as it is now: the published
    /// tree for its stamp, else one unpacked and published now.
    func tree(of file: ArchiveFile, limits: ZipArchive.Limits) throws(MachOError) -> String {
        let status = file.status
        let stamp = [
            "\(status.size)", "\(status.modifiedSeconds).\(status.modifiedNanoseconds)", "\(status.inode)", "\(status.device)", file.path,
        ].joined(separator: "\n") + "\n"
        let name = Self.treeName(path: file.path, stamp: stamp)
        if let app = try published(name, stamp: stamp) { return app }

        let zip = try ZipArchive(file: file, limits: limits)
        removeAbandonedUnpacks()
        let (freshName, fresh) = try privateDirectory()
        var kept = false
        defer { if !kept { try? FileManager.default.removeItem(atPath: path + "/" + freshName) } }
        try zip.extract(into: fresh, named: path + "/" + freshName)
        _ = try AppBundle.payloadApp(in: path + "/" + freshName)
        switch UnsafeFileAt.renameNoReplace(Array(freshName.utf8), to: Array(name.utf8), in: directory) {
        case nil: kept = true
        case EEXIST?, ENOTEMPTY?: break  // another process published the same archive first: its tree is used
        case let errno?: throw .io(path: path + "/" + name, reason: "cannot publish the unpacked archive: \(UnsafeFileAt.describe(errno))")
        }
        guard let app = try published(name, stamp: stamp) else { throw .io(path: path + "/" + name, reason: "the unpacked archive vanished as it was published") }
        return app
    }

    /// The name of the tree unpacked from the archive at real path `path` with `stamp`: the path's CRC-32 (the trees of one
    /// archive share the prefix), a hash of its stamp (a changed archive gets a new name) and
    /// its file name's letters, digits, `.`, `_` and `-` (at most 64).
    static func treeName(path: String, stamp: String) -> String {
        let leaf = path.split(separator: "/").last.map { Array($0.utf8) } ?? []
        let kept = leaf.filter { byte in
            (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || "._-".utf8.contains(byte)
        }.prefix(64)
        let pathKey = String(UnsafeInflate.crc32(Array(path.utf8)), radix: 16)
        let stampKey = String(fnv1a64(Array(stamp.utf8)), radix: 16)
        return "ipa-\(pathKey)-\(String(repeating: "0", count: 16 - stampKey.count) + stampKey)-\(String(decoding: kept, as: UTF8.self))"
    }

    /// The `Payload/X.app` of published tree `name` when there is one. Its stamp file is
    /// written when missing (its publisher has not written it yet, or died first); a stamp
    /// that differs means the name is another archive's, which is refused.
    private func published(_ name: String, stamp: String) throws(MachOError) -> String? {
        switch UnsafeFileAt.openDirectory(Array(name.utf8), in: directory) {
        case .success: break
        case .failure(ENOENT): return nil
        case .failure(ELOOP), .failure(ENOTDIR):
            throw .workArea(path: path + "/" + name, what: "is not a directory this tool unpacked: remove it")
        case let .failure(errno):
            throw .io(path: path + "/" + name, reason: "cannot open the unpacked archive: \(UnsafeFileAt.describe(errno))")
        }
        let stampName = Array((name + ".stamp").utf8)
        switch readSmallFile(stampName) {
        case nil: try writeStamp(stamp, to: stampName)
        case Array(stamp.utf8)?: break
        case _?: throw .workArea(path: path + "/" + name, what: "was unpacked from another archive (its .stamp differs): remove it and its .stamp")
        }
        return try AppBundle.payloadApp(in: path + "/" + name)
    }

    /// A new directory `.unpacking-<pid>-<random>`, mode 0700, and its descriptor.
    private func privateDirectory() throws(MachOError) -> (String, UnsafeFileAt.Descriptor) {
        while true {
            let name = ".unpacking-\(UnsafeFileAt.processID)-\(String(UInt64.random(in: 0...UInt64.max), radix: 16))"
            switch UnsafeFileAt.makeDirectory(Array(name.utf8), in: directory, mode: 0o700) {
            case nil: break
            case EEXIST?: continue
            case let errno?: throw .io(path: path + "/" + name, reason: "cannot create an unpack directory: \(UnsafeFileAt.describe(errno))")
            }
            return (name, try UnsafeFileAt.openDirectory(Array(name.utf8), in: directory).get(path: path + "/" + name, "cannot open an unpack directory"))
        }
    }

    /// Removes the unpack directories of processes that died before publishing them (a
    /// live process's is kept); they are never read, this only reclaims the space.
    private func removeAbandonedUnpacks() {
        for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] where name.hasPrefix(".unpacking-") || name.hasPrefix(".stamp-") {
            let parts = name.split(separator: "-")
            guard parts.count == 3, let pid = Int32(parts[1]), !UnsafeFileAt.processExists(pid) else { continue }
            try? FileManager.default.removeItem(atPath: path + "/" + name)
        }
    }

    /// The bytes of regular file `name` in the work area if it has at most 64 KiB, opened
    /// without following a link; nil otherwise.
    private func readSmallFile(_ name: [UInt8]) -> [UInt8]? {
        guard case let .success(file) = UnsafeFileAt.openFile(name, in: directory),
              case let .success(status) = file.status(), status.isRegularFile, status.size <= 1 << 16,
              case let .success(bytes) = file.read(at: 0, count: status.size) else { return nil }
        return bytes
    }

    /// Writes `stamp` to `name` atomically: a private temporary file renamed over it.
    private func writeStamp(_ stamp: String, to name: [UInt8]) throws(MachOError) {
        let temporary = Array(".stamp-\(UnsafeFileAt.processID)-\(String(UInt64.random(in: 0...UInt64.max), radix: 16))".utf8)
        let target = path + "/" + String(decoding: name, as: UTF8.self)
        let file = try UnsafeFileAt.createFile(temporary, in: directory).get(path: target, "cannot write the stamp")
        if let errno = file.write(Array(stamp.utf8)) ?? file.setMode(0o600) ?? UnsafeFileAt.rename(temporary, to: name, in: directory) {
            UnsafeFileAt.unlink(temporary, in: directory)
            throw .io(path: target, reason: "cannot write the stamp: \(UnsafeFileAt.describe(errno))")
        }
    }
}

/// FNV-1a, 64 bits: a short, stable name for a stamp (the stamp file beside the tree holds
/// the stamp itself, so a collision is detected, never used).
private func fnv1a64(_ bytes: [UInt8]) -> UInt64 {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
    return hash
}
