import LoaderCore
import ClosureCache
import ClosureFormat
import LaunchMemory
import LaunchPlan
import LoaderSystem
import MachOReader

/// A shared cache mapped for one launch: its copy slid for this boot (a
/// ``SlidPrelinkedSetHeader`` file in the closure's directory, written by the first launch of
/// the boot), read-only and copy-on-write at the one base chosen for the boot, each mapping
/// given its protection. Every process of the boot maps the same clean pages.
///
/// Per launch the cache itself is only opened, held to the closures' ownership rule and its
/// UUID compared with the closure's; its images are never checked one by one.
package enum SharedCacheRegion {
    /// The slid copy of `cache` for closures in `directory`.
    package static func slidCopyPath(_ cache: ClosureSharedCache, directory: String) -> String {
        directory + "/" + (cache.path.split(separator: "/").last.map(String.init) ?? "dyld_shared_cache") + "."
            + cache.uuid.map { String($0, radix: 16).leftPadded(to: 2) }.joined() + "." + ClosureCache.slidCacheExtension
    }

    /// Maps the cache `cache` names for the closure at `closurePath`: its range, and the base of
    /// every closure image with a ``CacheSlot`` (nil for the others). A cache that is missing,
    /// untrusted, another build (another UUID) or unreadable refuses the closure.
    package static func map(_ cache: ClosureSharedCache, images: [ClosureImage], closurePath: String) throws(ClosureError) -> LaunchMemory.SharedImages {
        let opened = try open(cache, closurePath: closurePath)
        return LaunchMemory.SharedImages(range: try opened.mapRange(), bases: try opened.bases(images))
    }

    /// Opens the copy of the cache `cache` names for the closure at `closurePath` (refused as
    /// ``map(_:images:closurePath:)`` refuses it), not mapped yet: a launch maps its range on
    /// another thread while it reads the closure's images and maps its own.
    package static func open(_ cache: ClosureSharedCache, closurePath: String) throws(ClosureError) -> Opened {
        let header = try currentHeader(cache, closurePath: closurePath)
        return try open(cache, rangeSize: header.sharedRegionSize, directory: PathResolver.containingDirectory(of: closurePath), refusing: closurePath)
    }

    /// Where one image of a launch lies in the cache's region: its offset, size and path.
    package struct Slot: Sendable {
        package let offset: UInt64
        package let size: UInt64
        package let path: String

        package init(offset: UInt64, size: UInt64, path: String) {
            (self.offset, self.size, self.path) = (offset, size, path)
        }
    }

    /// The cache's copy slid for this boot, opened and checked: where it is mapped is known
    /// before ``mapRange()`` maps it (its `mmap` and one `mprotect` per protection run, the
    /// costliest step of a launch from the cache).
    package struct Opened: @unchecked Sendable {
        let copy: SlidPrelinkedSetFile.Opened
        let refusing: String
        let cachePath: String

        /// The range mapped at the copy's base, with each mapping's protection.
        package func mapRange() throws(ClosureError) -> LaunchMemory.SlidRange {
            guard let range = try copy.mapRange() else {
                throw .mapping(path: refusing, image: cachePath, what: "the shared cache's range for this boot (\(hex(copy.header.base))) is taken in this process")
            }
            return range
        }

        /// The base of each image at `slots` once the range is mapped (nil: not in the cache);
        /// a slot leaving the region refuses the closure (or the cache).
        package func bases(_ slots: [Slot?]) throws(ClosureError) -> [UInt64?] {
            let size = copy.rangeSize
            return try slots.map { (slot) throws(ClosureError) -> UInt64? in
                guard let slot else { return nil }
                guard slot.offset <= size, slot.size <= size - slot.offset else {
                    throw .corrupt(path: refusing, offset: 0, what: "image \(slot.path) at +\(hex(slot.offset)) leaves the shared cache's \(size)-byte region")
                }
                return copy.header.base + slot.offset
            }
        }

        /// The base of each closure image of `images` with a ``CacheSlot``.
        package func bases(_ images: [ClosureImage]) throws(ClosureError) -> [UInt64?] {
            try bases(images.map { image in image.cacheSlot.map { Slot(offset: $0.offset, size: image.plan.vmSize, path: image.path) } })
        }
    }

    /// Maps the copy of `cache` slid for this boot, kept in `directory` (written first when
    /// there is none), for a launch whose images lie at `slots` (nil: not in the cache); a
    /// slot leaving the region refuses `refusing` (the closure, or the cache itself).
    package static func map(_ cache: ClosureSharedCache, rangeSize: UInt64, slots: [Slot?], directory: String,
                            refusing: String) throws(ClosureError) -> LaunchMemory.SharedImages {
        let opened = try open(cache, rangeSize: rangeSize, directory: directory, refusing: refusing)
        let bases = try opened.bases(slots)
        return LaunchMemory.SharedImages(range: try opened.mapRange(), bases: bases)
    }

    /// Opens the copy of `cache` slid for this boot, kept in `directory`, written first when
    /// there is none.
    static func open(_ cache: ClosureSharedCache, rangeSize: UInt64, directory: String, refusing: String) throws(ClosureError) -> Opened {
        let copyPath = slidCopyPath(cache, directory: directory)
        let (checksum, dataHash) = identity(cache.uuid)
        var opened = SlidPrelinkedSetFile.open(copyPath, setChecksum: checksum, setDataHash: dataHash, rangeSize: rangeSize)
        if case .failure = opened {
            try writeSlidCopy(cache, to: copyPath)
            opened = SlidPrelinkedSetFile.open(copyPath, setChecksum: checksum, setDataHash: dataHash, rangeSize: rangeSize)
        }
        return Opened(copy: try opened.get(), refusing: refusing, cachePath: cache.path)
    }

    /// The header of the cache at `cache.path`, opened without following a link and held to
    /// the closures' ownership rule, when it is the build the closure names.
    static func currentHeader(_ cache: ClosureSharedCache, closurePath: String) throws(ClosureError) -> DyldCache.Header {
        let header = try checkedHeader(cache.path, refusing: closurePath)
        guard header.uuid == cache.uuid else {
            throw .stale(path: closurePath, image: cache.path, what: "(the shared cache) was rebuilt: its UUID is not the one the closure binds into")
        }
        return header
    }

    /// The header of the cache at `path`, opened without following a link and held to the
    /// closures' ownership rule; a cache that is gone refuses `refusing`.
    package static func checkedHeader(_ path: String, refusing: String) throws(ClosureError) -> DyldCache.Header {
        let file = try UnsafeFileIO.openNoFollow(path, ifMissing: .stale(path: refusing, image: path, what: "(the shared cache) was removed")).get()
        try ClosureFile.checkOwnership(path, file.status)
        do throws(MachOError) {
            return try DyldCache.Header(parsing: ByteView(file.read(offset: 0, count: DyldCache.headerSize)))
        } catch {
            throw .corrupt(path: path, offset: error.offset, what: error.description)
        }
    }

    /// Refuses a cache whose mappings do not each lie in the file at their offset in the
    /// region: this loader maps a cache's region as one range of its file.
    static func checkOneRange(_ file: DyldCacheFile, path: String) throws(ClosureError) {
        let start = file.header.sharedRegionStart, size = file.header.sharedRegionSize
        guard size <= UInt64(file.view.count) else {
            throw .corrupt(path: path, offset: 0, what: "its \(size)-byte region is larger than the file")
        }
        for (index, mapping) in file.mappings.enumerated() where mapping.address &- start != mapping.fileOffset || mapping.fileOffset &+ mapping.size > size {
            throw .incompatible(path: path, what: "mapping \(index) is not at its region offset in the file: this loader maps a cache as one range")
        }
    }

    /// The slid copy's two identifying words: the cache's UUID.
    static func identity(_ uuid: [UInt8]) -> (UInt64, UInt64) {
        (uuid.littleEndianWord(0), uuid.littleEndianWord(8))
    }

    /// Reads the whole cache (every table bounded by the file, every slide chain inside its
    /// page and the cache), slides its region to a random base for this boot and writes the
    /// copy atomically at `path`.
    static func writeSlidCopy(_ cache: ClosureSharedCache, to path: String) throws(ClosureError) {
        guard let bootID = SlidPrelinkedSetFile.bootID else {
            throw .incompatible(path: path, what: "this boot's id (/proc/sys/kernel/random/boot_id) cannot be read: nothing is slid for a boot")
        }
        let file = try read(cache)
        let start = file.header.sharedRegionStart, size = file.header.sharedRegionSize
        guard file.header.uuid == cache.uuid else {
            throw .stale(path: path, image: cache.path, what: "(the shared cache) was rebuilt: its UUID is not the one the closure binds into")
        }
        // The bytes against the UUID the builder made from them: the copy every launch of the
        // boot maps holds only what the closure's UUID names.
        guard SharedCacheVerification.contentMatchesUUID(file.view, uuid: file.header.uuid) else {
            throw .corrupt(path: cache.path, offset: 88, what: "its bytes do not hash to its UUID (changed since it was built): rebuild it with `dyld3 shared-cache build`")
        }
        try checkOneRange(file, path: cache.path)
        let base = LaunchMemory.randomBase(pageSize: LaunchMemory.pageSize)
        var data: [UInt8]
        do throws(MachOError) {
            data = try file.view.bytes(0, Int(size))
            for (index, mapping) in file.mappings.enumerated() {
                var outside: UInt64?
                try file.forEachSlidLocation(inMapping: index) { offset, pointer in
                    let value = pointer & DyldCache.SlideInfo.addressBits
                    guard value != 0 else { return }
                    guard value >= start, value - start < size else { return outside = outside ?? mapping.address + offset }
                    let at = Int(mapping.fileOffset + offset)
                    let slid = (value - start + base) | (pointer & ~DyldCache.SlideInfo.addressBits)
                    for byte in 0..<8 { data[at + byte] = UInt8(truncatingIfNeeded: slid >> (8 * UInt64(byte))) }
                }
                if let outside {
                    throw MachOError.inCache("dyld_cache_slide_info", at: Int(mapping.slideInfoFileOffset), what: "the pointer at \(hex(outside)) leaves the cache")
                }
            }
        } catch {
            throw .corrupt(path: cache.path, offset: error.offset, what: error.description)
        }
        let protections = file.mappings.map {
            SlidPrelinkedSetHeader.ProtectionRun(range: ($0.address - start)..<($0.address - start + $0.size),
                                                 protection: VMProtection(rawValue: Int32(truncatingIfNeeded: $0.initProt)).intersection(.readWriteExecute))
        }.filter { $0.protection != .read }
        let (checksum, dataHash) = identity(cache.uuid)
        let header = SlidPrelinkedSetHeader(setChecksum: checksum, setDataHash: dataHash, base: base, bootID: bootID,
                                            dataHash: UnsafeHash.xxh3(data), protections: protections)
        try SlidPrelinkedSetFile.write(header, data: data, to: path)
    }

    /// The whole cache `cache` names, mapped and its tables read (each bounded by the file).
    static func read(_ cache: ClosureSharedCache) throws(ClosureError) -> DyldCacheFile {
        do {
            return try DyldCacheFile(parsing: try ImageFile.mapRegularFile(cache.path))
        } catch let error as MachOError {
            throw .corrupt(path: cache.path, offset: error.offset, what: error.description)
        } catch {
            throw .corrupt(path: cache.path, offset: 0, what: "\(error)")
        }
    }

    /// Per image of `images`, the offsets (from the image's base) of the words the cache's slide
    /// info slides: what a launch's digest counts as pointers in the cache's images.
    package static func slideLocations(_ cache: ClosureSharedCache, images: [ClosureImage]) throws(ClosureError) -> [[UInt64]] {
        let file = try read(cache)
        let slots = images.map { image in image.cacheSlot.map { (offset: $0.offset, size: image.plan.vmSize) } }
        return try pointers(in: file, path: cache.path, slots: slots).map { $0.map(\.vmOffset) }
    }

    /// Per slot of `slots` (an image's offset in the region and its size; nil: not in the
    /// cache), the words the slide info of `file` slides there, in address order: each one's
    /// offset from the image's base and the region offset it points at.
    package static func pointers(in file: DyldCacheFile, path: String, slots: [(offset: UInt64, size: UInt64)?])
        throws(ClosureError) -> [[(vmOffset: UInt64, target: UInt64)]] {
        let start = file.header.sharedRegionStart
        var all: [(location: UInt64, target: UInt64)] = []
        do throws(MachOError) {
            for (index, mapping) in file.mappings.enumerated() {
                try file.forEachSlidLocation(inMapping: index) { offset, value in
                    let target = value & DyldCache.SlideInfo.addressBits
                    if target != 0 { all.append((mapping.address - start + offset, target &- start)) }
                }
            }
        } catch {
            throw .corrupt(path: path, offset: error.offset, what: error.description)
        }
        all.sort { $0.location < $1.location }
        return slots.map { slot in
            guard let slot else { return [] }
            let low = all.partitionPoint { $0.location < slot.offset }
            return all[low...].prefix { $0.location - slot.offset < slot.size }.map { ($0.location - slot.offset, $0.target) }
        }
    }
}
