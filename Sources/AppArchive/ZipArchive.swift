import Foundation
import MachOReader

/// A zip archive (an `.ipa`) read through its central directory, with every bound checked
/// before anything is read or unpacked: entry count, total unpacked size, archive size, and
/// every size and offset an entry claims against the archive's own size. Entries are stored
/// (method 0) or deflated (method 8); ZIP64, multi-disk and encrypted archives are refused.
/// Names are checked as bytes: relative paths that stay inside the destination (no `/`
/// start, no `.`/`..`/empty component, no backslash or NUL), of bounded length and depth.
/// Symbolic links and other special files are refused, never created; files are created
/// relative to a descriptor of the destination without following a link at any level.
package struct ZipArchive: Sendable {
    /// Bounds on what an archive may make the reader allocate or write.
    package struct Limits: Sendable {
        package var maxEntries: Int, maxUnpackedBytes: Int, maxArchiveBytes: Int

        package init(maxEntries: Int = 50_000, maxUnpackedBytes: Int = 1 << 30, maxArchiveBytes: Int = 1 << 30) {
            (self.maxEntries, self.maxUnpackedBytes, self.maxArchiveBytes) = (maxEntries, maxUnpackedBytes, maxArchiveBytes)
        }
    }

    /// The longest entry name read, in bytes (a path deeper or longer than this is no app's).
    package static let maxNameBytes = 1024
    /// The most components an entry name may have.
    package static let maxNameComponents = 64
    /// The most a deflate stream expands its input: 258 bytes from one bit-and-a-half
    /// length code (1032:1), plus a stream's few bytes of framing.
    static let maxDeflateRatio = 1032
    /// The most a deflate stream may be longer than what it holds: a sane encoder falls back
    /// to stored blocks (5 bytes per 65,535), so twice the unpacked size and a constant are
    /// far above any real stream.
    static func maxDeflatedBytes(unpacked: Int) -> Int { 2 * unpacked + 1024 }

    /// One central-directory entry.
    package struct Entry: Equatable, Sendable {
        /// The name as the archive spells it (a trailing `/` for a directory).
        package let name: String
        /// Its path components, checked, as the bytes the archive holds.
        package let components: [[UInt8]]
        package let isDirectory: Bool
        package let method: UInt16
        package let crc32: UInt32
        package let compressedSize: Int, unpackedSize: Int, localHeaderOffset: Int
        /// Whether a Unix mode gives any execute bit.
        package let isExecutable: Bool
        /// Where the entry's slot ends: the next entry's local header, or the central
        /// directory. Its local header and data lie before it.
        package internal(set) var slotEnd: Int
    }

    package let path: String
    package let entries: [Entry]
    /// The archive, opened once: what the central directory was read from is what is unpacked.
    private let file: ArchiveFile

    /// Reads the central directory of the archive at `path`.
    package init(path: String, limits: Limits = Limits()) throws(MachOError) {
        try self.init(file: ArchiveFile(path: path), limits: limits)
    }

    /// Reads the central directory of the archive open as `file`.
    init(file: ArchiveFile, limits: Limits) throws(MachOError) {
        let path = file.path
        self.path = path
        self.file = file
        let archiveSize = file.size
        guard archiveSize <= limits.maxArchiveBytes else {
            throw .limit(archive: path, what: "the archive is \(archiveSize) bytes, more than the \(limits.maxArchiveBytes) allowed")
        }
        // The end-of-central-directory record: 22 bytes and a comment of at most 65535.
        let tailStart = max(0, archiveSize - (22 + 0xffff))
        let tail = try file.read(at: tailStart, count: archiveSize - tailStart)
        // The last signature whose comment length reaches exactly to the end of the file.
        guard let eocd = stride(from: tail.count - 22, through: 0, by: -1).first(where: { index in
            u32(tail, index) == 0x0605_4b50 && index + 22 + Int(u16(tail, index + 20)) == tail.count
        }) else { throw .malformed(archive: path, offset: archiveSize, what: "no end-of-central-directory record") }
        let eocdOffset = tailStart + eocd
        let disk = u16(tail, eocd + 4), cdDisk = u16(tail, eocd + 6)
        let count = Int(u16(tail, eocd + 10)), cdSize = Int(u32(tail, eocd + 12)), cdOffset = Int(u32(tail, eocd + 16))
        guard disk == 0, cdDisk == 0, Int(u16(tail, eocd + 8)) == count else { throw .malformed(archive: path, offset: eocdOffset, what: "a multi-disk archive") }
        guard count != 0xffff, cdSize != 0xffff_ffff, cdOffset != 0xffff_ffff else {
            throw .limit(archive: path, what: "a ZIP64 archive, which this reader does not read")
        }
        guard count <= limits.maxEntries else { throw .limit(archive: path, what: "\(count) entries, more than the \(limits.maxEntries) allowed") }
        // Each entry takes at least its 46-byte record: a count the directory cannot hold is
        // refused before anything is allocated for it.
        guard cdOffset + cdSize <= eocdOffset, count * 46 <= cdSize else {
            throw .malformed(archive: path, offset: eocdOffset, what: "the central directory (\(cdSize) bytes at \(cdOffset) for \(count) entries) does not fit before its end record")
        }
        let directory = try file.read(at: cdOffset, count: cdSize)

        var parsed: [Entry] = []
        parsed.reserveCapacity(count)
        var tree = NameTree()
        var unpacked = 0
        var offset = 0
        for _ in 0..<count {
            guard offset + 46 <= directory.count, u32(directory, offset) == 0x0201_4b50 else {
                throw .malformed(archive: path, offset: cdOffset + offset, what: "a central-directory entry is expected")
            }
            // The fixed 46 bytes, then the name, extra field and comment.
            let end = offset + 46 + Int(u16(directory, offset + 28)) + Int(u16(directory, offset + 30)) + Int(u16(directory, offset + 32))
            guard end <= directory.count else {
                throw .malformed(archive: path, offset: cdOffset + offset, what: "a central-directory entry runs past the directory")
            }
            let entry = try Self.entry(record: Array(directory[offset..<end]), archive: path, dataEnd: cdOffset, at: cdOffset + offset)
            unpacked += entry.unpackedSize
            guard unpacked <= limits.maxUnpackedBytes else {
                throw .limit(archive: path, what: "it unpacks to more than the \(limits.maxUnpackedBytes) bytes allowed")
            }
            if let problem = tree.insert(entry.components, isDirectory: entry.isDirectory) {
                throw .unsafeEntry(archive: path, entry: Self.shown(entry.name), what: problem)
            }
            parsed.append(entry)
            offset = end
        }
        entries = try Self.slotted(parsed, archive: path, centralDirectory: cdOffset)
    }

    /// `entries` with their slots: each entry's local header and data (at least 30 bytes and
    /// its compressed size) end before the next entry's local header or the central
    /// directory, so no byte of the archive is read for two entries and everything read is
    /// bounded by the archive's size.
    private static func slotted(_ entries: [Entry], archive: String, centralDirectory: Int) throws(MachOError) -> [Entry] {
        let order = entries.indices.sorted { entries[$0].localHeaderOffset < entries[$1].localHeaderOffset }
        var slotted = entries
        for (position, index) in order.enumerated() {
            let entry = entries[index]
            let end = position + 1 < order.count ? entries[order[position + 1]].localHeaderOffset : centralDirectory
            guard entry.localHeaderOffset + 30 + entry.compressedSize <= end else {
                throw .malformed(archive: archive, offset: entry.localHeaderOffset, what: "entry \(shown(entry.name).debugDescription) (\(entry.compressedSize) compressed bytes) overlaps the next entry or the central directory at \(end)")
            }
            slotted[index].slotEnd = end
        }
        return slotted
    }

    /// A name as an error shows it: whole when short, else its start and its length.
    static func shown(_ name: String) -> String {
        name.utf8.count <= 200 ? name : String(decoding: name.utf8.prefix(120), as: UTF8.self) + "… (\(name.utf8.count) bytes)"
    }

    /// The entry of a central-directory record (at `offset` in the archive), checked: its
    /// method, its flags, its kind, its name and the sizes it claims (bounded by `dataEnd`,
    /// where the central directory starts, before anything is read).
    private static func entry(record: [UInt8], archive: String, dataEnd: Int, at offset: Int) throws(MachOError) -> Entry {
        let nameBytes = Array(record[46..<(46 + Int(u16(record, 28)))])
        let madeBy = u16(record, 4), flags = u16(record, 8), method = u16(record, 10), external = u32(record, 38)
        let compressed = Int(u32(record, 20)), unpacked = Int(u32(record, 24)), local = Int(u32(record, 42))
        guard nameBytes.count <= maxNameBytes else {
            throw .unsafeEntry(archive: archive, entry: shown(String(decoding: nameBytes, as: UTF8.self)),
                               what: "has a \(nameBytes.count)-byte name, more than the \(maxNameBytes) allowed")
        }
        guard let name = String(validating: nameBytes, as: UTF8.self) else {
            throw .malformed(archive: archive, offset: offset + 46, what: "an entry name is not UTF-8")
        }
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
        let components: [[UInt8]]
        switch checkedComponents(nameBytes) {
        case let .success(checked): components = checked
        case let .failure(problem): throw .unsafeEntry(archive: archive, entry: name, what: problem.description)
        }
        let isDirectory = nameBytes.last == UInt8(ascii: "/") || mode & 0o170000 == 0o040000
        guard !isDirectory || unpacked == 0 else { throw .unsafeEntry(archive: archive, entry: name, what: "is a directory holding \(unpacked) bytes") }
        // Every size is bounded before a byte of the entry is read: its data lies between its
        // local header and the central directory, a stored entry's two sizes agree, and a
        // deflated entry's sizes are within what deflate can do.
        guard local + 30 + compressed <= dataEnd else {
            throw .malformed(archive: archive, offset: offset, what: "entry \(name.debugDescription) claims \(compressed) bytes at \(local), past the central directory at \(dataEnd)")
        }
        if method == 0 {
            guard compressed == unpacked else { throw .malformed(archive: archive, offset: offset, what: "stored entry \(name.debugDescription) has two sizes") }
        } else {
            guard compressed <= maxDeflatedBytes(unpacked: unpacked), unpacked <= compressed * maxDeflateRatio else {
                throw .malformed(archive: archive, offset: offset, what: "deflated entry \(name.debugDescription) claims \(compressed) bytes for \(unpacked), which no deflate stream holds")
            }
        }
        return Entry(
            name: name, components: components, isDirectory: isDirectory, method: method, crc32: u32(record, 16),
            compressedSize: compressed, unpackedSize: unpacked, localHeaderOffset: local,
            isExecutable: mode & 0o111 != 0, slotEnd: dataEnd)
    }

    /// Why an entry name cannot be unpacked.
    package enum NameProblem: Error, Equatable, CustomStringConvertible {
        case absolute, nul, backslash, escape, tooDeep

        package var description: String {
            switch self {
            case .absolute: "is an absolute path"
            case .nul: "contains a NUL byte"
            case .backslash: "contains a backslash (a path separator to other unzips)"
            case .escape: "has an empty, . or .. component (it could leave the unpack directory)"
            case .tooDeep: "has more than \(ZipArchive.maxNameComponents) components"
            }
        }
    }

    /// The components of entry name `name`, checked as bytes, first to last: components are
    /// split on `/` (and a `\\` is refused, being a separator to other unzips), none empty,
    /// `.` or `..`, no NUL, not absolute, at most ``maxNameComponents``; one trailing `/`
    /// marks a directory. Bytes are never decoded first: what is checked is what the kernel
    /// will split.
    package static func checkedComponents(_ name: [UInt8]) -> Result<[[UInt8]], NameProblem> {
        let slash = UInt8(ascii: "/"), backslash = UInt8(ascii: "\\")
        guard let first = name.first else { return .failure(.escape) }
        guard first != slash else { return .failure(.absolute) }
        var components: [[UInt8]] = []
        for component in name.dropLast(name.last == slash ? 1 : 0).split(separator: slash, omittingEmptySubsequences: false) {
            switch component.first(where: { $0 == 0 || $0 == backslash }) {
            case 0?: return .failure(.nul)
            case backslash?: return .failure(.backslash)
            default: break
            }
            guard !component.isEmpty, !component.elementsEqual(".".utf8), !component.elementsEqual("..".utf8) else { return .failure(.escape) }
            guard components.count < maxNameComponents else { return .failure(.tooDeep) }
            components.append(Array(component))
        }
        return .success(components)
    }

    /// Unpacks every entry under `directory`, which must not exist yet: it is created
    /// (mode 0700), and nothing else is written outside it.
    package func extract(to directory: String) throws(MachOError) {
        if let errno = UnsafeFileAt.makeDirectory(directory, mode: 0o700) {
            throw .io(path: directory, reason: "cannot create the unpack directory: \(UnsafeFileAt.describe(errno))")
        }
        let root = try UnsafeFileAt.open(directory, noFollow: true, directory: true).get(path: directory, "cannot open the unpack directory")
        try extract(into: root, named: directory)
    }

    /// Unpacks every entry into the directory open as `root` (shown as `name`): every file
    /// and directory is created relative to it, through no symbolic link at any level. A
    /// file's bytes are inflated into a buffer of its declared size and checked against its
    /// CRC-32 before they are written.
    func extract(into root: UnsafeFileAt.Descriptor, named name: String) throws(MachOError) {
        var directories = DirectoryWalker(root: root, rootName: name)
        for entry in entries {
            if entry.isDirectory {
                _ = try directories.open(entry.components[...])
                continue
            }
            let parent = try directories.open(entry.components.dropLast())
            let target = name + "/" + entry.name
            let bytes = try contents(of: entry)
            let created = try UnsafeFileAt.createFile(entry.components[entry.components.count - 1], in: parent)
                .get(path: target, "cannot create an unpacked entry")
            if let errno = created.write(bytes) ?? created.setMode(entry.isExecutable ? 0o755 : 0o644) {
                throw .io(path: target, reason: "cannot write an unpacked entry: \(UnsafeFileAt.describe(errno))")
            }
        }
    }

    /// The unpacked bytes of `entry`, read through its local header within its slot.
    private func contents(of entry: Entry) throws(MachOError) -> [UInt8] {
        let header = try file.read(at: entry.localHeaderOffset, count: 30)
        guard u32(header, 0) == 0x0403_4b50 else {
            throw .malformed(archive: path, offset: entry.localHeaderOffset, what: "no local header for \(Self.shown(entry.name).debugDescription)")
        }
        let dataOffset = entry.localHeaderOffset + 30 + Int(u16(header, 26)) + Int(u16(header, 28))
        guard dataOffset + entry.compressedSize <= entry.slotEnd else {
            throw .malformed(archive: path, offset: entry.localHeaderOffset, what: "the data of \(Self.shown(entry.name).debugDescription) runs into the next entry or the central directory")
        }
        let stored = try file.read(at: dataOffset, count: entry.compressedSize)
        let bytes: [UInt8]
        if entry.method == 0 {
            bytes = stored
        } else {
            guard let inflated = UnsafeInflate.inflate(stored, size: entry.unpackedSize) else {
                throw .malformed(archive: path, offset: dataOffset, what: "entry \(Self.shown(entry.name).debugDescription) does not inflate to its \(entry.unpackedSize) bytes")
            }
            bytes = inflated
        }
        guard UnsafeInflate.crc32(bytes) == entry.crc32 else {
            throw .malformed(archive: path, offset: dataOffset, what: "entry \(Self.shown(entry.name).debugDescription) fails its CRC-32")
        }
        return bytes
    }
}

/// The names an archive holds, as a tree of components: each name is used once, and no
/// path is both a file and a directory (every component but a name's last is a directory).
/// Work is linear in the names' lengths.
private struct NameTree {
    private struct Key: Hashable {
        let parent: Int
        let component: [UInt8]
    }

    private struct Node {
        let id: Int
        var isDirectory: Bool
        /// Whether an entry names this path itself (not only a path below it).
        var isNamed: Bool
    }

    private var nodes: [Key: Node] = [:]

    /// Records a name; why it conflicts with one recorded before, if it does.
    mutating func insert(_ components: [[UInt8]], isDirectory: Bool) -> String? {
        var parent = 0
        for (index, component) in components.enumerated() {
            let isLast = index == components.count - 1
            let key = Key(parent: parent, component: component)
            let kind = !isLast || isDirectory
            if var node = nodes[key] {
                if isLast, node.isNamed { return "appears twice" }
                if node.isDirectory != kind { return "is both a file and a directory" }
                if isLast {
                    node.isNamed = true
                    nodes[key] = node
                }
                parent = node.id
            } else {
                let node = Node(id: nodes.count + 1, isDirectory: kind, isNamed: isLast)
                nodes[key] = node
                parent = node.id
            }
        }
        return nil
    }
}

/// Opens (creating where missing) the directories entries are unpacked into, relative to
/// the unpack root and through no symbolic link: `openat2` resolves an existing path
/// beneath the root in one call; otherwise each component is opened with `O_NOFOLLOW |
/// O_DIRECTORY` (created by `mkdirat` first when missing), iteratively. The last directory
/// opened is kept, since entries of one directory usually follow each other.
private struct DirectoryWalker {
    let root: UnsafeFileAt.Descriptor
    let rootName: String
    private var last: (path: ArraySlice<[UInt8]>, directory: UnsafeFileAt.Descriptor)?

    init(root: UnsafeFileAt.Descriptor, rootName: String) {
        (self.root, self.rootName) = (root, rootName)
    }

    mutating func open(_ components: ArraySlice<[UInt8]>) throws(MachOError) -> UnsafeFileAt.Descriptor {
        if components.isEmpty { return root }
        if let last, last.path == components { return last.directory }
        let directory: UnsafeFileAt.Descriptor
        switch UnsafeFileAt.openDirectoryBeneath(Self.joined(components), in: root) {
        case let .success(opened): directory = opened
        case .failure(ELOOP), .failure(EXDEV), .failure(ENOTDIR): throw .io(path: shown(components), reason: Self.notADirectory)
        case .failure:
            // Missing (ENOENT), or no openat2 (ENOSYS, or refused by a seccomp filter): one
            // component at a time.
            directory = try walk(components)
        }
        last = (components, directory)
        return directory
    }

    private func walk(_ components: ArraySlice<[UInt8]>) throws(MachOError) -> UnsafeFileAt.Descriptor {
        var current = root
        var depth = components.startIndex
        for component in components {
            depth += 1
            var opened = UnsafeFileAt.openDirectory(component, in: current)
            if case .failure(ENOENT) = opened {
                if let errno = UnsafeFileAt.makeDirectory(component, in: current, mode: 0o755), errno != EEXIST {
                    throw .io(path: shown(components[..<depth]), reason: "cannot create a directory: \(UnsafeFileAt.describe(errno))")
                }
                opened = UnsafeFileAt.openDirectory(component, in: current)
            }
            switch opened {
            case let .success(next): current = next
            case let .failure(errno):
                let reason = errno.errno == ELOOP || errno.errno == ENOTDIR
                    ? Self.notADirectory : "cannot open a directory: \(UnsafeFileAt.describe(errno))"
                throw .io(path: shown(components[..<depth]), reason: reason)
            }
        }
        return current
    }

    private static let notADirectory = "a symbolic link or a file is where the unpack expects a directory"

    private static func joined(_ components: ArraySlice<[UInt8]>) -> [UInt8] { Array(components.joined(separator: [UInt8(ascii: "/")])) }

    /// The directory `components` name, as an error shows it.
    private func shown(_ components: ArraySlice<[UInt8]>) -> String {
        rootName + "/" + ZipArchive.shown(String(decoding: Self.joined(components), as: UTF8.self))
    }
}

/// Little-endian fields of a byte array, at offsets the caller has bounds-checked.
private func u16(_ bytes: [UInt8], _ offset: Int) -> UInt16 {
    UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8
}

private func u32(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
    UInt32(u16(bytes, offset)) | UInt32(u16(bytes, offset + 2)) << 16
}

/// The archive file, opened once and read by offset and count (never past its size).
final class ArchiveFile: Sendable {
    let path: String
    let status: UnsafeFileAt.Status
    var size: Int { status.size }
    private let descriptor: UnsafeFileAt.Descriptor

    init(path: String) throws(MachOError) {
        self.path = path
        switch UnsafeFileAt.open(path) {
        case let .success(opened): descriptor = opened
        case let .failure(errno): throw .io(path: path, reason: errno.errno == ENOENT ? "no such file" : "cannot read: \(UnsafeFileAt.describe(errno))")
        }
        status = try descriptor.status().get(path: path, "cannot examine")
        guard status.isRegularFile else { throw .io(path: path, reason: "not a regular file") }
    }

    func read(at offset: Int, count: Int) throws(MachOError) -> [UInt8] {
        guard offset >= 0, count >= 0, offset <= size, count <= size - offset else {
            throw .malformed(archive: path, offset: offset, what: "\(count) bytes are needed past the end of the file (\(size) bytes)")
        }
        switch descriptor.read(at: offset, count: count) {
        case let .success(bytes) where bytes.count == count: return bytes
        case .success: throw .io(path: path, reason: "short read at offset \(offset)")
        case let .failure(errno): throw .io(path: path, reason: "cannot read at offset \(offset): \(UnsafeFileAt.describe(errno))")
        }
    }
}
