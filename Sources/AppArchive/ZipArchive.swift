import Foundation
import MachOReader

/// A zip archive (an `.ipa`) read through its central directory, with every bound checked
/// before anything is unpacked: entry count, total unpacked size, archive size. Entries
/// are stored (method 0) or deflated (method 8); ZIP64, multi-disk and encrypted archives
/// are refused. Names must be relative paths that stay inside the destination (no `/`
/// start, no `.`/`..`/empty component, no backslash or NUL); symbolic links and other
/// special files are refused, never created, so unpacking follows no link.
package struct ZipArchive: Sendable {
    /// Bounds on what an archive may make the reader allocate or write.
    package struct Limits: Sendable {
        package var maxEntries: Int
        package var maxUnpackedBytes: Int
        package var maxArchiveBytes: Int

        package init(maxEntries: Int = 50_000, maxUnpackedBytes: Int = 1 << 30, maxArchiveBytes: Int = 1 << 30) {
            self.maxEntries = maxEntries
            self.maxUnpackedBytes = maxUnpackedBytes
            self.maxArchiveBytes = maxArchiveBytes
        }
    }

    /// One central-directory entry.
    package struct Entry: Equatable, Sendable {
        /// The name as the archive spells it (a trailing `/` for a directory).
        package let name: String
        /// Its path components, checked.
        package let components: [String]
        package let isDirectory: Bool
        package let method: UInt16
        package let crc32: UInt32
        package let compressedSize: Int
        package let unpackedSize: Int
        package let localHeaderOffset: Int
        /// Whether a Unix mode gives any execute bit.
        package let isExecutable: Bool
    }

    package let path: String
    package let entries: [Entry]
    private let archiveSize: Int
    /// Where the central directory starts: every entry's data lies before it.
    private let centralDirectoryOffset: Int

    /// Reads the central directory of the archive at `path`.
    package init(path: String, limits: Limits = Limits()) throws(MachOError) {
        self.path = path
        let file = try ArchiveFile(path: path)
        archiveSize = file.size
        guard archiveSize <= limits.maxArchiveBytes else {
            throw .limit(archive: path, what: "the archive is \(archiveSize) bytes, more than the \(limits.maxArchiveBytes) allowed")
        }
        // The end-of-central-directory record: 22 bytes and a comment of at most 65535.
        let tailStart = max(0, archiveSize - (22 + 0xffff))
        let tail = try file.read(at: tailStart, count: archiveSize - tailStart)
        var eocd: Int?
        var index = tail.count - 22
        while index >= 0 {
            if u32(tail, index) == 0x0605_4b50, index + 22 + Int(u16(tail, index + 20)) == tail.count {
                eocd = index
                break
            }
            index -= 1
        }
        guard let eocd else {
            throw .malformed(archive: path, offset: archiveSize, what: "no end-of-central-directory record")
        }
        let eocdOffset = tailStart + eocd
        let disk = u16(tail, eocd + 4), cdDisk = u16(tail, eocd + 6)
        let count = Int(u16(tail, eocd + 10)), cdSize = Int(u32(tail, eocd + 12)), cdOffset = Int(u32(tail, eocd + 16))
        guard disk == 0, cdDisk == 0, Int(u16(tail, eocd + 8)) == count else {
            throw .malformed(archive: path, offset: eocdOffset, what: "a multi-disk archive")
        }
        guard count != 0xffff, cdSize != 0xffff_ffff, cdOffset != 0xffff_ffff else {
            throw .limit(archive: path, what: "a ZIP64 archive, which this reader does not read")
        }
        guard count <= limits.maxEntries else {
            throw .limit(archive: path, what: "\(count) entries, more than the \(limits.maxEntries) allowed")
        }
        guard cdOffset + cdSize <= eocdOffset else {
            throw .malformed(archive: path, offset: eocdOffset, what: "the central directory (\(cdSize) bytes at \(cdOffset)) overlaps its end record")
        }
        centralDirectoryOffset = cdOffset
        let directory = try file.read(at: cdOffset, count: cdSize)

        var entries: [Entry] = []
        var named = Set<String>()
        var kinds: [String: Bool] = [:]  // path → is a directory
        var unpacked = 0
        var offset = 0
        for _ in 0..<count {
            guard offset + 46 <= directory.count, u32(directory, offset) == 0x0201_4b50 else {
                throw .malformed(archive: path, offset: cdOffset + offset, what: "a central-directory entry is expected")
            }
            let madeBy = u16(directory, offset + 4), flags = u16(directory, offset + 8), method = u16(directory, offset + 10)
            let nameLength = Int(u16(directory, offset + 28)), extraLength = Int(u16(directory, offset + 30))
            let commentLength = Int(u16(directory, offset + 32))
            let end = offset + 46 + nameLength + extraLength + commentLength
            guard end <= directory.count else {
                throw .malformed(archive: path, offset: cdOffset + offset, what: "a central-directory entry runs past the directory")
            }
            let nameBytes = Array(directory[(offset + 46)..<(offset + 46 + nameLength)])
            guard let name = String(validating: nameBytes, as: UTF8.self) else {
                throw .malformed(archive: path, offset: cdOffset + offset + 46, what: "an entry name is not UTF-8")
            }
            let entry = try Self.entry(
                name: name, archive: path, madeBy: madeBy, flags: flags, method: method,
                external: u32(directory, offset + 38), crc: u32(directory, offset + 16),
                compressed: Int(u32(directory, offset + 20)), unpacked: Int(u32(directory, offset + 24)),
                local: Int(u32(directory, offset + 42)))
            unpacked += entry.unpackedSize
            guard unpacked <= limits.maxUnpackedBytes else {
                throw .limit(archive: path, what: "it unpacks to more than the \(limits.maxUnpackedBytes) bytes allowed")
            }
            // A name is not used twice, nor as a file and as a directory (every prefix of a
            // name is a directory).
            let joined = entry.components.joined(separator: "/")
            guard named.insert(joined).inserted else { throw .unsafeEntry(archive: path, entry: name, what: "appears twice") }
            for depth in 1...entry.components.count {
                let prefix = entry.components[..<depth].joined(separator: "/")
                let isDirectory = depth < entry.components.count || entry.isDirectory
                if let known = kinds[prefix], known != isDirectory {
                    throw .unsafeEntry(archive: path, entry: name, what: "is both a file and a directory")
                }
                kinds[prefix] = isDirectory
            }
            entries.append(entry)
            offset = end
        }
        self.entries = entries
    }

    /// An entry checked: its method, its flags, its kind and its name.
    private static func entry(
        name: String, archive: String, madeBy: UInt16, flags: UInt16, method: UInt16,
        external: UInt32, crc: UInt32, compressed: Int, unpacked: Int, local: Int
    ) throws(MachOError) -> Entry {
        guard flags & 1 == 0 else { throw .unsafeEntry(archive: archive, entry: name, what: "is encrypted") }
        guard method == 0 || method == 8 else {
            throw .unsafeEntry(archive: archive, entry: name, what: "uses compression method \(method) (only stored and deflate are read)")
        }
        guard compressed != 0xffff_ffff, unpacked != 0xffff_ffff, local != 0xffff_ffff else {
            throw .limit(archive: archive, what: "entry \(name.debugDescription) needs ZIP64, which this reader does not read")
        }
        // A Unix mode (made by Unix: the high byte of "version made by" is 3) in the
        // external attributes' high half: only regular files and directories.
        let mode = madeBy >> 8 == 3 ? (external >> 16) & 0o177777 : 0
        switch mode & 0o170000 {
        case 0, 0o100000, 0o040000: break
        case 0o120000: throw .unsafeEntry(archive: archive, entry: name, what: "is a symbolic link")
        default: throw .unsafeEntry(archive: archive, entry: name, what: "is a special file (mode \(String(mode, radix: 8)))")
        }
        let isDirectory = name.hasSuffix("/") || mode & 0o170000 == 0o040000
        guard !name.hasPrefix("/") else { throw .unsafeEntry(archive: archive, entry: name, what: "is an absolute path") }
        guard !name.contains("\\"), !name.contains("\0") else {
            throw .unsafeEntry(archive: archive, entry: name, what: "contains a backslash or NUL")
        }
        var components = name.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        if name.hasSuffix("/") { components.removeLast() }
        guard !components.isEmpty, !components.contains(where: { $0.isEmpty || $0 == "." || $0 == ".." }) else {
            throw .unsafeEntry(archive: archive, entry: name, what: "has an empty, . or .. component (it could leave the unpack directory)")
        }
        guard !isDirectory || unpacked == 0 else {
            throw .unsafeEntry(archive: archive, entry: name, what: "is a directory holding \(unpacked) bytes")
        }
        return Entry(
            name: name, components: components, isDirectory: isDirectory, method: method, crc32: crc,
            compressedSize: compressed, unpackedSize: unpacked, localHeaderOffset: local, isExecutable: mode & 0o111 != 0)
    }

    /// Unpacks every entry under `directory`, which must not exist yet: it is created, and
    /// nothing else is written outside it. A file's bytes are inflated into a buffer of
    /// its declared size and checked against its CRC-32 before they are written.
    package func extract(to directory: String) throws(MachOError) {
        let file = try ArchiveFile(path: path)
        try Self.createDirectory(directory, exclusive: true)
        for entry in entries {
            let target = directory + "/" + entry.components.joined(separator: "/")
            if entry.isDirectory {
                try Self.createDirectory(target, exclusive: false)
                continue
            }
            try Self.createDirectory(directory + "/" + entry.components.dropLast().joined(separator: "/"), exclusive: false)
            let bytes = try contents(of: entry, in: file)
            do {
                try Data(bytes).write(to: URL(fileURLWithPath: target), options: .withoutOverwriting)
                try FileManager.default.setAttributes([.posixPermissions: entry.isExecutable ? 0o755 : 0o644], ofItemAtPath: target)
            } catch {
                throw .io(path: target, reason: "cannot write an unpacked entry: \(error.localizedDescription)")
            }
        }
    }

    /// The unpacked bytes of `entry`, read through its local header.
    private func contents(of entry: Entry, in file: ArchiveFile) throws(MachOError) -> [UInt8] {
        let header = try file.read(at: entry.localHeaderOffset, count: 30)
        guard header.count == 30, u32(header, 0) == 0x0403_4b50 else {
            throw .malformed(archive: path, offset: entry.localHeaderOffset, what: "no local header for \(entry.name.debugDescription)")
        }
        let dataOffset = entry.localHeaderOffset + 30 + Int(u16(header, 26)) + Int(u16(header, 28))
        guard dataOffset + entry.compressedSize <= centralDirectoryOffset else {
            throw .malformed(archive: path, offset: entry.localHeaderOffset, what: "the data of \(entry.name.debugDescription) runs into the central directory")
        }
        let stored = try file.read(at: dataOffset, count: entry.compressedSize)
        let bytes: [UInt8]
        if entry.method == 0 {
            guard entry.compressedSize == entry.unpackedSize else {
                throw .malformed(archive: path, offset: dataOffset, what: "stored entry \(entry.name.debugDescription) has two sizes")
            }
            bytes = stored
        } else {
            guard let inflated = UnsafeInflate.inflate(stored, size: entry.unpackedSize) else {
                throw .malformed(archive: path, offset: dataOffset, what: "entry \(entry.name.debugDescription) does not inflate to its \(entry.unpackedSize) bytes")
            }
            bytes = inflated
        }
        guard UnsafeInflate.crc32(bytes) == entry.crc32 else {
            throw .malformed(archive: path, offset: dataOffset, what: "entry \(entry.name.debugDescription) fails its CRC-32")
        }
        return bytes
    }

    private static func createDirectory(_ path: String, exclusive: Bool) throws(MachOError) {
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: !exclusive)
        } catch {
            throw .io(path: path, reason: "cannot create a directory: \(error.localizedDescription)")
        }
    }
}

/// Little-endian fields of a byte array, at offsets the caller has bounds-checked.
private func u16(_ bytes: [UInt8], _ offset: Int) -> UInt16 {
    UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8
}

private func u32(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
    UInt32(u16(bytes, offset)) | UInt32(u16(bytes, offset + 2)) << 16
}

/// The archive file, read by offset and count (never past its size).
private struct ArchiveFile {
    let path: String
    let size: Int
    private let handle: FileHandle

    init(path: String) throws(MachOError) {
        self.path = path
        do {
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            guard attributes[.type] as? FileAttributeType == .typeRegular else {
                throw MachOError.io(path: path, reason: "not a regular file")
            }
            size = (attributes[.size] as? NSNumber)?.intValue ?? 0
            handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
        } catch let error as MachOError {
            throw error
        } catch {
            throw .io(path: path, reason: "cannot read: \(error.localizedDescription)")
        }
    }

    func read(at offset: Int, count: Int) throws(MachOError) -> [UInt8] {
        guard offset >= 0, count >= 0, offset + count <= size else {
            throw .malformed(archive: path, offset: offset, what: "\(count) bytes are needed past the end of the file (\(size) bytes)")
        }
        do {
            try handle.seek(toOffset: UInt64(offset))
            let data = try handle.read(upToCount: count) ?? Data()
            guard data.count == count else { throw MachOError.io(path: path, reason: "short read at offset \(offset)") }
            return [UInt8](data)
        } catch let error as MachOError {
            throw error
        } catch {
            throw .io(path: path, reason: "cannot read at offset \(offset): \(error.localizedDescription)")
        }
    }
}
