/// Everything `dyld3 bench` measured, as written to `bench.json`. Times are nanoseconds.
public struct BenchReport: Codable, Sendable {
    public var machine: Machine
    public var runs: Int
    public var arch: String
    public var style: String
    public var seed: Int
    /// How `--cold` emptied the page cache before each cold sample; nil without `--cold`.
    public var coldEviction: EvictionMethod?
    /// The apps' Objective-C part (`--objc-classes`...); nil for the C-only apps.
    public var objc: ObjCShape?
    public var sizes: [SizeResult]

    /// Where the numbers come from.
    public struct Machine: Codable, Sendable {
        public var cores: Int
        public var kernel: String
        public var date: String
    }
}

/// The launch paths, in the order they are interleaved.
public enum LaunchPath: String, Codable, Sendable, CaseIterable {
    case dyld2, dyld3, floor
    /// The floor, then each image's final protections (`__DATA_CONST` read-only, as dyld3
    /// and dyld2 leave it): the same final memory as the launch paths, protections included.
    case floorProtected = "floor-protected"
    /// glibc on the twin laid out like the Mach-O bundle: a directory per framework, each
    /// object's DT_RUNPATH listing its dependencies' directories.
    case glibc
    /// glibc on the twin laid out as ELF projects ship: one directory, DT_RUNPATH `$ORIGIN`.
    case glibcOneDir = "glibc-one-dir"

    /// The paths that run glibc's loader, one per layout of the twin.
    public static let glibcPaths: [LaunchPath] = [.glibc, .glibcOneDir]

    /// The name tables and charts give the path.
    public var label: String {
        switch self {
        case .dyld2, .dyld3, .floor: rawValue
        case .floorProtected: "floor + protections"
        case .glibc: "glibc (per-framework dirs)"
        case .glibcOneDir: "glibc (one dir)"
        }
    }

    /// Of `values` (by path name), the glibc layout with the smaller median: every glibc
    /// ratio is taken against it, so glibc is compared at its best.
    public static func fasterGlibc(_ values: [String: Distribution]) -> (path: LaunchPath, median: Int64)? {
        glibcPaths.compactMap { path in values[path.rawValue].map { (path, $0.median) } }.filter { $0.1 > 0 }.min { $0.1 < $1.1 }
    }
}

/// One app size: every path's times, and what the closure costs and saves.
public struct SizeResult: Codable, Sendable {
    public var dylibs: Int
    /// Images loaded (frameworks + main + libSystem).
    public var images: Int
    /// Mach-O fixups (rebases + binds) every Mach-O path writes; glibc's relocation count.
    public var fixups: Int
    public var rebases: Int
    public var binds: Int
    public var elfRelocations: Int
    /// Pages holding at least one fixup (what the floor writes to).
    public var fixupPages: Int

    /// (a)–(d) in one process, interleaved round-robin: in-process time around the load only.
    public var warm: [String: Distribution]
    /// Each sample a fresh process: dyld3/dyld2's in-process `timings.total`, glibc's dlopen time.
    public var fresh: [String: Distribution]
    /// Fresh processes: peak RSS (kB), per path.
    public var freshMaxRSSKilobytes: [String: Distribution]
    /// Medians of the dyld3 and dyld2 launch phases (warm), by phase name.
    public var dyld3Phases: [String: Int64]
    public var dyld2Phases: [String: Int64]
    /// Warm median nanoseconds per fixup (glibc: per ELF relocation).
    public var nanosecondsPerFixup: [String: Double]
    /// Pages each path leaves privately dirty in the images' mappings (/proc/self/smaps).
    public var pagesDirtied: [String: Int]
    /// This process's peak RSS (kB) after this size (ru_maxrss: grows monotonically).
    public var benchMaxRSSKilobytes: Int

    /// (e) the closure.
    public var closure: ClosureCost

    /// `--cold`: each sample after the page cache was emptied of the path's files
    /// (``BenchReport/coldEviction`` says how), by path; nil without `--cold`.
    public var cold: [String: Distribution]?
    /// `--cold`: medians of the dyld3 launch phases over the cold samples.
    public var coldDyld3Phases: [String: Int64]?
    /// `--cold`: per path, the pages of its files still resident just after an eviction
    /// (mincore, checked once per path in the discarded round) and their total pages.
    public var residentAfterEviction: [String: ResidentPages]?
    /// Page-in linking beside eager dyld3 (`--fixups page-in`); nil when not asked for.
    public var pageIn: PageInResult?
    /// The Objective-C step's share of dyld2's and dyld3's launch; nil for C-only apps.
    public var objc: ObjCShare?
}

/// Pages of a set of files in the page cache, against all their pages.
public struct ResidentPages: Codable, Sendable, Equatable {
    public var resident: Int
    public var total: Int
}

/// What building a closure costs and how big it is against the images' own metadata.
public struct ClosureCost: Codable, Sendable {
    /// `ClosureBuilder.build` + `ClosureFile.write`, as `dyld3 install` does.
    public var build: Distribution
    /// Bytes of the closure file (header + zstd frame).
    public var fileBytes: Int
    public var bytesPerFixup: Double
    /// Sum over images of LC_DYLD_INFO's rebase/bind/weak/lazy/export sizes, or
    /// LC_DYLD_CHAINED_FIXUPS + LC_DYLD_EXPORTS_TRIE sizes.
    public var imageMetadataBytes: Int
    /// fileBytes / imageMetadataBytes.
    public var relativeToMetadata: Double
}
