/// Everything `dyld3 bench` measured, as written to `bench.json` (snake_case keys:
/// ``LaunchBench/encoder``). Times are nanoseconds, and every key that holds them says so
/// (`warm_ns`, `fresh_ns`, `dyld3_phases_ns`, `build_ns`: docs/json.md).
package struct BenchReport: Codable, Sendable {
    /// The bench.json layout's version (docs/json.md); nil in files written before it had one.
    package var schemaVersion: Int? = BenchReport.currentSchemaVersion
    package var machine: Machine
    package var runs: Int
    package var arch: String, style: String
    package var seed: Int
    /// How `--cold` emptied the page cache before each cold sample; nil without `--cold`.
    package var coldEviction: EvictionMethod?
    /// The apps' Objective-C part (`--objc-classes`...); nil for the C-only apps.
    package var objc: ObjCShape?
    package var sizes: [SizeResult]

    /// 2: time keys carry `_ns` (`warm_ns`, `touch_ns`, …); 1 had bare `warm`, `touch`.
    package static let currentSchemaVersion = 2

    /// Where the numbers come from.
    package struct Machine: Codable, Sendable {
        package var cores: Int
        package var kernel: String, date: String
    }
}

/// The launch paths, in the order they are interleaved.
package enum LaunchPath: String, Codable, Sendable, CaseIterable {
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
    package static let glibcPaths: [LaunchPath] = [.glibc, .glibcOneDir]

    /// How tables and charts show a path: its name in tables, its name in a chart's legend,
    /// and its line's colour, dash pattern (solid when nil) and marker.
    var style: (label: String, legend: String, color: String, dash: String?, marker: SVGCharts.Marker) {
        switch self {
        case .dyld2: ("dyld2", "dyld2 (slow path)", "#d62728", nil, .circle(2.5))
        case .dyld3: ("dyld3", "dyld3 (closure)", "#1f77b4", nil, .square(8))
        case .floor: ("floor", "mapping floor", "#7f7f7f", "6 4", .polygon([(0, -8), (8, 0), (0, 8), (-8, 0)]))
        case .floorProtected: ("floor + protections", "floor + protections", "#bcbd22", "2 3", .polygon([(0, -6.5), (5.5, 4), (-5.5, 4)]))
        case .glibc: ("glibc (per-framework dirs)", "glibc (per-fw dirs)", "#2ca02c", nil, .circle(6.5))
        case .glibcOneDir: ("glibc (one dir)", "glibc (one dir)", "#8c564b", "8 3 2 3", .square(11))
        }
    }

    /// The name tables and charts give the path.
    package var label: String { style.label }

    /// Of `values` (by path name), the glibc layout with the smaller median: every glibc
    /// ratio is taken against it, so glibc is compared at its best.
    package static func fasterGlibc(_ values: [String: Distribution]) -> (path: LaunchPath, median: Int64)? {
        glibcPaths.compactMap { path in values[path.rawValue].map { (path, $0.median) } }.filter { $0.1 > 0 }.min { $0.1 < $1.1 }
    }
}

/// A bench's report of one result per size: its samples per path, how cold samples emptied
/// the page cache, and each size's result.
package struct SizesBenchReport<Size: Codable & Sendable>: Codable, Sendable {
    package var schemaVersion = 1
    package var runs: Int
    package var coldEviction: EvictionMethod?
    package var sizes: [Size]

    /// Each of `configuration`'s dylib counts measured in turn by `measure(count, eviction)`,
    /// `eviction` being how `--cold` samples empty the page cache (nil without `--cold`).
    static func measuring(_ configuration: BenchConfiguration,
                          _ measure: (_ dylibs: Int, _ eviction: EvictionMethod?) async throws -> Size) async throws -> Self {
        let eviction = try configuration.evictionMethod()
        var sizes: [Size] = []
        for dylibs in configuration.dylibCounts { sizes.append(try await measure(dylibs, eviction)) }
        return Self(runs: configuration.runs, coldEviction: eviction, sizes: sizes)
    }
}

/// One app size: every path's times, and what the closure costs and saves.
package struct SizeResult: Codable, Sendable {
    package var dylibs: Int
    /// Images loaded (frameworks + main + libSystem).
    package var images: Int
    /// Mach-O fixups (rebases + binds) every Mach-O path writes; glibc's relocation count.
    package var fixups: Int
    package var rebases: Int, binds: Int, elfRelocations: Int
    /// Pages holding at least one fixup (what the floor writes to).
    package var fixupPages: Int

    /// (a)–(d) in one process, interleaved round-robin: in-process time around the load only.
    package var warm: [String: Distribution]
    /// Each sample a fresh process: dyld3/dyld2's in-process `timings.total`, glibc's dlopen time.
    package var fresh: [String: Distribution]
    /// Fresh processes: peak RSS (kB), per path.
    package var freshMaxRssKilobytes: [String: Distribution]
    /// Medians of the dyld3 and dyld2 launch phases (warm), by phase name.
    package var dyld3Phases: [String: Int64], dyld2Phases: [String: Int64]
    /// Warm median nanoseconds per fixup (glibc: per ELF relocation).
    package var nanosecondsPerFixup: [String: Double]
    /// Pages each path leaves privately dirty in the images' mappings (/proc/self/smaps).
    package var pagesDirtied: [String: Int]
    /// This process's peak RSS (kB) after this size (ru_maxrss: grows monotonically).
    package var benchMaxRssKilobytes: Int

    /// (e) the closure.
    package var closure: ClosureCost

    /// `--cold`: each sample after the page cache was emptied of the path's files
    /// (``BenchReport/coldEviction`` says how), by path; nil without `--cold`.
    package var cold: [String: Distribution]?
    /// `--cold`: medians of the dyld3 launch phases over the cold samples.
    package var coldDyld3Phases: [String: Int64]?
    /// `--cold`: per path, the pages of its files still resident just after an eviction
    /// (mincore, checked once per path in the discarded round) and their total pages.
    package var residentAfterEviction: [String: ResidentPages]?
    /// Page-in linking beside eager dyld3 (`--fixups page-in`); nil when not asked for.
    package var pageIn: PageInResult?
    /// The Objective-C step's share of dyld2's and dyld3's launch; nil for C-only apps.
    package var objc: ObjCShare?
    /// What verifying the images' code signatures costs; nil when no image is signed.
    package var codeSigning: CodeSigningCost? = nil

    /// Keys holding times carry `Ns` (`_ns` once snake-cased).
    enum CodingKeys: String, CodingKey {
        case dylibs, images, fixups, rebases, binds, elfRelocations, fixupPages
        case warm = "warmNs", fresh = "freshNs", freshMaxRssKilobytes
        case dyld3Phases = "dyld3PhasesNs", dyld2Phases = "dyld2PhasesNs"
        case nanosecondsPerFixup, pagesDirtied, benchMaxRssKilobytes, closure
        case cold = "coldNs", coldDyld3Phases = "coldDyld3PhasesNs", residentAfterEviction, pageIn, objc, codeSigning
    }
}

/// Pages of a set of files in the page cache, against all their pages.
package struct ResidentPages: Codable, Sendable, Equatable {
    package var resident: Int, total: Int
}

/// What building a closure costs and how big it is against the images' own metadata.
package struct ClosureCost: Codable, Sendable {
    /// `ClosureBuilder.build` + `ClosureFile.write`, as `dyld3 install` does.
    package var build: Distribution
    /// Bytes of the closure file (header + zstd frame).
    package var fileBytes: Int
    package var bytesPerFixup: Double
    /// Sum over images of LC_DYLD_INFO's rebase/bind/weak/lazy/export sizes, or
    /// LC_DYLD_CHAINED_FIXUPS + LC_DYLD_EXPORTS_TRIE sizes.
    package var imageMetadataBytes: Int
    /// fileBytes / imageMetadataBytes.
    package var relativeToMetadata: Double

    enum CodingKeys: String, CodingKey {
        case build = "buildNs", fileBytes, bytesPerFixup, imageMetadataBytes, relativeToMetadata
    }
}
