import ClosureFormat
import LoaderCore
import LaunchPlan
import MachOReader

extension ClosureCache {
    /// The file extension of a set slid for this boot, written beside its set.
    public static let slidSetExtension = "dyld3slid"

    /// The slid copy's path for the set at `setPath`: the same name, its own extension.
    public static func slidSetPath(forSet setPath: String) -> String {
        let suffix = "." + prelinkedSetExtension
        let stem = setPath.hasSuffix(suffix) ? String(setPath.dropLast(suffix.count)) : setPath
        return stem + "." + slidSetExtension
    }
}

/// The set slid for this boot (``SlidPrelinkedSetHeader``): found, checked and written
/// beside its set. It is a cache of the set: whatever is wrong with it (missing, another
/// boot's, another set's, damaged) is a reason to slide the set at launch and write it again,
/// never a refusal of the launch.
public enum SlidPrelinkedSetFile {
    /// This boot's identity: the 16 bytes of `/proc/sys/kernel/random/boot_id`; nil when it
    /// cannot be read (then nothing is slid for a boot).
    public static let bootID: [UInt8]? = {
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

    /// A slid copy opened and checked for `set`: its descriptor (the data is mapped from
    /// it) and header.
    public final class Opened {
        let file: UnsafeFileIO.OpenFile
        public let path: String
        public let header: SlidPrelinkedSetHeader
        package var fd: Int32 { file.fd }

        init(file: UnsafeFileIO.OpenFile, path: String, header: SlidPrelinkedSetHeader) {
            self.file = file
            self.path = path
            self.header = header
        }

        /// Checks the data against the header's hash (reads all of it).
        public func checkData() throws(ClosureError) {
            guard let all = file.mapAll(), let data = try? all.slice(Int(SlidPrelinkedSetHeader.dataOffset), all.count - Int(SlidPrelinkedSetHeader.dataOffset)) else {
                throw .corrupt(path: path, offset: Int(SlidPrelinkedSetHeader.dataOffset), what: "the data cannot be mapped")
            }
            guard UnsafeHash.xxh3(data) == header.dataHash else {
                throw .corrupt(path: path, offset: Int(SlidPrelinkedSetHeader.dataOffset), what: "the data's hash is not the one the header records")
            }
        }
    }

    /// Why a slid copy cannot be used: missing, or the error naming it.
    public enum Unusable: Error, CustomStringConvertible {
        case missing
        case refused(ClosureError)

        public var description: String {
            switch self {
            case .missing: "no copy slid for this boot yet"
            case let .refused(error): "\(error)"
            }
        }
    }

    /// Opens the copy at `path` and checks it is this boot's copy of `set` (whose header is
    /// `setHeader`): ownership as for closures, header, checksum, the set's checksum and data
    /// hash, the boot id, the size.
    public static func open(_ path: String, set: PrelinkedSet, setHeader: PrelinkedSetHeader) -> Result<Opened, Unusable> {
        let file: UnsafeFileIO.OpenFile
        switch UnsafeFileIO.openNoFollow(path) {
        case let .success(opened): file = opened
        case .failure(.missing): return .failure(.missing)
        case let .failure(.refused(reason)): return .failure(.refused(.untrusted(path: path, what: reason)))
        }
        do throws(ClosureError) {
            try ClosureFile.checkOwnership(path, file.status)
            let header = try SlidPrelinkedSetHeader(parsing: file.read(offset: 0, count: SlidPrelinkedSetHeader.size), fileSize: file.status.size,
                                                    rangeSize: set.rangeSize, path: path)
            guard header.setChecksum == setHeader.checksum, header.setDataHash == setHeader.dataHash else {
                throw ClosureError.stale(path: path, image: path, what: "is a copy of another prelinked set")
            }
            guard let bootID, header.bootID == bootID else {
                throw ClosureError.stale(path: path, image: path, what: "was slid for another boot")
            }
            guard header.base % set.pageSize == 0, header.base <= UInt64.max - set.rangeSize else {
                throw ClosureError.corrupt(path: path, offset: 40, what: "base 0x\(String(header.base, radix: 16)) is not a page-aligned range start")
            }
            return .success(Opened(file: file, path: path, header: header))
        } catch {
            return .failure(.refused(error))
        }
    }

    /// Slides `set`'s data (from `opened`, the set file) to a random base and writes it
    /// atomically, read-only, at `path`, for this boot. The slide runs are checked first.
    public static func write(for opened: PrelinkedSetFile.Opened, to path: String) throws(ClosureError) {
        guard let bootID else {
            throw .incompatible(path: path, what: "this boot's id (/proc/sys/kernel/random/boot_id) cannot be read: nothing is slid for a boot")
        }
        let set = opened.set
        try set.checkSlideRuns(path: opened.path)
        guard let all = opened.file.mapAll(), let data = try? all.slice(Int(opened.header.dataOffset), Int(opened.header.dataSize)) else {
            throw .corrupt(path: opened.path, offset: Int(opened.header.dataOffset), what: "the data cannot be mapped")
        }
        let base = LaunchMemory.randomBase(pageSize: set.pageSize)
        let slid = try set.slid(data, to: base, path: opened.path)
        let header = SlidPrelinkedSetHeader(setChecksum: opened.header.checksum, setDataHash: opened.header.dataHash, base: base,
                                            bootID: bootID, dataHash: UnsafeHash.xxh3(slid))
        var file = header.bytes
        file += [UInt8](repeating: 0, count: Int(SlidPrelinkedSetHeader.dataOffset) - file.count)
        file += slid
        do throws(SystemCallFailure) {
            try UnsafeFileIO.writeAtomically(file, to: path)
        } catch {
            throw .systemCallFailed(path: path, error)
        }
    }
}
