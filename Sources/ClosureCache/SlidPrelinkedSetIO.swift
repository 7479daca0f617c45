import ClosureFormat
import LoaderCore
import LaunchPlan
import MachOReader
import LaunchMemory

extension ClosureCache {
    /// The file extension of a set slid for this boot, written beside its set.
    package static let slidSetExtension = "dyld3slid"

    /// The file extension of a dyld shared cache slid for this boot, written beside the
    /// closures that bind into it.
    package static let slidCacheExtension = "dyld3slidcache"

    /// The slid copy's path for the set at `setPath`: the same name, its own extension.
    package static func slidSetPath(forSet setPath: String) -> String {
        sibling(of: setPath, extension: prelinkedSetExtension, as: slidSetExtension)
    }
}

/// The set slid for this boot (``SlidPrelinkedSetHeader``), beside its set. A cache of the set:
/// whatever is wrong with it is a reason to slide the set at launch and write it again, never
/// a refusal of the launch.
package enum SlidPrelinkedSetFile {
    /// The 16 bytes of `/proc/sys/kernel/random/boot_id`; nil when it cannot be read.
    package static let bootID: [UInt8]? = {
        guard case let .success(file) = UnsafeFileIO.openNoFollow("/proc/sys/kernel/random/boot_id") else { return nil }
        var bytes: [UInt8] = [], pending: UInt8?
        for character in file.read(offset: 0, count: 64) {
            guard let digit = Character(Unicode.Scalar(character)).hexDigitValue.map(UInt8.init) else { continue }
            if let high = pending {
                bytes.append(high << 4 | digit)
                pending = nil
            } else {
                pending = digit
            }
        }
        return bytes.count == 16 ? bytes : nil
    }()

    /// A slid copy opened and checked: its descriptor (the data is mapped from it) and header.
    package final class Opened {
        let file: UnsafeFileIO.OpenFile
        package let path: String
        package let header: SlidPrelinkedSetHeader
        package let rangeSize: UInt64

        init(file: UnsafeFileIO.OpenFile, path: String, header: SlidPrelinkedSetHeader, rangeSize: UInt64) {
            (self.file, self.path, self.header, self.rangeSize) = (file, path, header, rangeSize)
        }

        /// The copy's data mapped read-only at its base and given its protection runs
        /// (``LaunchMemory/SlidRange``); nil when that range is taken in this process.
        package func mapRange() throws(ClosureError) -> LaunchMemory.SlidRange? {
            do throws(LoadError) {
                return try LaunchMemory.SlidRange.map(fd: file.fd, dataOffset: header.dataOffset, size: rangeSize, base: header.base,
                                                      protections: header.protections.map { ($0.range, $0.protection) },
                                                      path: path)
            } catch {
                guard case let .mapping(image, reason) = error else { throw .mapping(path: path, image: path, what: "\(error)") }
                throw .mapping(path: path, image: image, what: reason)
            }
        }

        /// Checks the data against the header's hash (reads all of it).
        package func checkData() throws(ClosureError) {
            guard let all = file.mapAll(), let data = try? all.slice(Int(header.dataOffset), all.count - Int(header.dataOffset)) else {
                throw .corrupt(path: path, offset: Int(header.dataOffset), what: "the data cannot be mapped")
            }
            guard UnsafeHash.xxh3(data) == header.dataHash else {
                throw .corrupt(path: path, offset: Int(header.dataOffset), what: "the data's hash is not the one the header records")
            }
        }
    }

    /// Opens the copy at `path` and checks it is this boot's copy of the set whose header
    /// declares `setChecksum`, `setDataHash` and a `rangeSize`-byte range: ownership, header,
    /// checksum, protection runs, the set's checksum and data hash, the boot id, the size.
    package static func open(_ path: String, setChecksum: UInt64, setDataHash: UInt64, rangeSize: UInt64) -> Result<Opened, ClosureError> {
        Result { () throws(ClosureError) in
            let file = try UnsafeFileIO.openNoFollow(path, ifMissing: .noSlidCopy(path: path)).get()
            try ClosureFile.checkOwnership(path, file.status)
            // A set's limit bounds its copy, and so what is read of the copy's protection runs.
            guard file.status.size <= PrelinkedSetFile.maxFileSize, rangeSize <= PrelinkedSetFile.maxFileSize else {
                throw ClosureError.corrupt(path: path, offset: 0, what: "\(file.status.size) bytes (a \(rangeSize)-byte range) is over the "
                    + "\(PrelinkedSetFile.maxFileSize)-byte limit for a prelinked set")
            }
            let page = LaunchMemory.pageSize
            let fields = file.read(offset: 0, count: SlidPrelinkedSetHeader.size)
            let limit = Int(min(file.status.size, UInt64(SlidPrelinkedSetHeader.size) + rangeSize / page * UInt64(SlidPrelinkedSetHeader.runSize)))
            let prefix = fields.count < SlidPrelinkedSetHeader.size ? fields
                : file.read(offset: 0, count: SlidPrelinkedSetHeader.declaredSize(fields, limit: limit))
            let header = try SlidPrelinkedSetHeader(parsing: prefix, fileSize: file.status.size, rangeSize: rangeSize, pageSize: page, path: path)
            guard header.setChecksum == setChecksum, header.setDataHash == setDataHash else {
                throw ClosureError.stale(path: path, image: path, what: "is a copy of another prelinked set")
            }
            guard let bootID, header.bootID == bootID else {
                throw ClosureError.stale(path: path, image: path, what: "was slid for another boot")
            }
            // A copy is slid to a random base (``LaunchMemory/randomBase(pageSize:)``): one
            // elsewhere (0, the kernel's half, past user space) was not written by a launch and
            // is written again rather than refused at every launch.
            guard header.base % page == 0, LaunchMemory.randomBases.contains(header.base) else {
                throw ClosureError.corrupt(path: path, offset: 40, what: "base \(hex(header.base)) is not a page-aligned start in "
                    + "\(hex(LaunchMemory.randomBases.lowerBound))...\(hex(LaunchMemory.randomBases.upperBound)), where a copy is slid")
            }
            return Opened(file: file, path: path, header: header, rangeSize: rangeSize)
        }
    }

    /// ``open(_:setChecksum:setDataHash:rangeSize:)`` for the set `opened`, its protection
    /// runs checked against the set's plans too.
    package static func open(_ path: String, for opened: PrelinkedSetFile.Opened) -> Result<Opened, ClosureError> {
        open(path, setChecksum: opened.header.checksum, setDataHash: opened.header.dataHash, rangeSize: opened.set.rangeSize).flatMap { copy in
            guard copy.header.protections == protections(of: opened.set) else {
                return .failure(.corrupt(path: path, offset: SlidPrelinkedSetHeader.size,
                                         what: "its protection runs are not the ones its set's plans call for"))
            }
            return .success(copy)
        }
    }

    /// The protection runs the set's range takes once mapped read-only, from its plans.
    package static func protections(of set: PrelinkedSet) -> [SlidPrelinkedSetHeader.ProtectionRun] {
        LaunchMemory.prelinkedProtections(plans: set.closure.images.map(\.plan), offsets: set.imageOffsets, rangeSize: set.rangeSize,
                                          from: .read).map {
            SlidPrelinkedSetHeader.ProtectionRun(range: $0.range, protection: $0.protection)
        }
    }

    /// Slides the set's data to a random base and writes it atomically, read-only, at `path`,
    /// for this boot. The slide runs are checked first.
    package static func write(for opened: PrelinkedSetFile.Opened, to path: String) throws(ClosureError) {
        guard let bootID else {
            throw .incompatible(path: path, what: "this boot's id (/proc/sys/kernel/random/boot_id) cannot be read: nothing is slid for a boot")
        }
        let set = opened.set
        guard !set.bindsIntoSharedCache else {
            throw .incompatible(path: path, what: "a set bound into the shared cache is slid at each launch: the cache's words in it are written once the cache is mapped")
        }
        try set.checkSlideRuns(path: opened.path)
        let base = LaunchMemory.randomBase(pageSize: set.pageSize)
        let slid = try set.slid(try opened.data(), to: base, path: opened.path)
        let header = SlidPrelinkedSetHeader(setChecksum: opened.header.checksum, setDataHash: opened.header.dataHash, base: base,
                                            bootID: bootID, dataHash: UnsafeHash.xxh3(slid), protections: protections(of: set))
        try write(header, data: slid, to: path)
    }

    /// Writes a slid copy, `header` then `data` at its data offset, atomically and read-only.
    package static func write(_ header: SlidPrelinkedSetHeader, data: [UInt8], to path: String) throws(ClosureError) {
        var file = header.bytes
        file += [UInt8](repeating: 0, count: Int(header.dataOffset) - file.count)
        file += data
        try UnsafeFileIO.writeCacheFile(file, to: path)
    }
}
