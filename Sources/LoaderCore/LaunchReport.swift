import LaunchPlan
import RuntimeServices
import MachOReader

/// What a launch did, for `--stats`, `--json`, `compare` and the benchmarks, from either path.
package struct LaunchReport: Sendable {
    /// The phases of a launch, in order.
    package enum Phase: String, CaseIterable, Sendable {
        case closure, pathResolution = "path_resolution", parsing, mapping, rebase, bind, objc
        case initializers, main, total

        /// The phase's place in ``allCases``: its slot in ``PhaseTimings``.
        var slot: Int {
            switch self {
            case .closure: 0
            case .pathResolution: 1
            case .parsing: 2
            case .mapping: 3
            case .rebase: 4
            case .bind: 5
            case .objc: 6
            case .initializers: 7
            case .main: 8
            case .total: 9
            }
        }
    }

    /// The nanoseconds each phase took, for the phases the launch timed: one slot per phase,
    /// no hashing. (A fresh process pays the Swift runtime's first instantiation of each hashed
    /// container type, tens of microseconds, inside the launch it measures.)
    package struct PhaseTimings: Sendable, Sequence {
        private var nanoseconds = [Int64](repeating: .min, count: 10)

        package init() {}

        package subscript(phase: Phase) -> Int64? {
            get { nanoseconds[phase.slot] == .min ? nil : nanoseconds[phase.slot] }
            set { nanoseconds[phase.slot] = newValue ?? .min }
        }

        /// The timed phases in launch order.
        package func makeIterator() -> some IteratorProtocol<(phase: Phase, nanoseconds: Int64)> {
            Phase.allCases.lazy.compactMap { phase in self[phase].map { (phase, $0) } }.makeIterator()
        }
    }

    package var mode: String
    /// Image paths in load order.
    package var images: [String] = []
    package var rebases = 0
    package var binds = 0
    package var symbolLookups = 0
    /// The main (first) image's slide.
    package var slide: UInt64 = 0
    package var timings = PhaseTimings()
    /// Whether main ran, and what it returned.
    package var ran = false
    package var result: Int32?
    /// Why code did not run, when it did not.
    package var notRun: NotRunReason?
    /// Why the Objective-C step did not run; nil when it ran.
    package var objcSkipped: ObjCSkipReason?
    /// Image paths in the order their initializers ran.
    package var initializers: [String] = []
    /// What the launch's code opened with `dlopen`, in order.
    package var dynamicLoads: [DynamicLoadEvent] = []
    /// xxh3 of every writable segment after fixups, slide-independent; nil under page-in.
    package var digest: UInt64? = 0
    package var fixupsMode: FixupsMode = .eager
    /// Why a page-in launch was asked for but fixups were written eagerly.
    package var pageInFallback: PageInFallback?
    /// Page-in: pages indexed, and bytes registered with the handler.
    package var fixupPages = 0
    package var registeredBytes: UInt64 = 0
    /// Page-in: pages the handler had filled when the launch returned (after main, if it ran).
    package var pagesFilled = 0
    /// dyld3: how many images' content was hashed to confirm their identity; nil for dyld2.
    package var imagesHashed: Int?
    /// dyld3 `--verify-pages`: the pages checked after mapping (timed as `parsing`); nil otherwise.
    package var pagesVerified: Int?
    /// Images taken from the shared cache, and the address its range was mapped at (the same
    /// in every launch of the boot); nil without a cache.
    package var sharedCache: (images: Int, base: UInt64)?
    /// dyld2: why the shared cache it was asked to take dylibs from was not used (`auto`
    /// loaded them from their files).
    package var sharedCacheRefusal: String?
    /// A prelinked launch: whether it mapped the set slid for this boot, whether it wrote that
    /// copy first, and why it slid the set at launch instead.
    package var slidForBoot = false
    package var slidSetWritten = false
    package var slideAtLaunch: SlideAtLaunchReason?

    package init(mode: String) { self.mode = mode }
}

/// Why a launch's code did not run: the report says so once, in these words.
package enum NotRunReason: Equatable, Sendable, CustomStringConvertible {
    case notAsked
    case stubImage(path: String)
    case otherArchitecture(String)
    case noMain(path: String)

    package var description: String {
        switch self {
        case .notAsked: "--no-run"
        case let .stubImage(path):
            "\(path) is a stub from a stub root (it carries \(StubImageMarker.segmentName),"
                + "\(StubImageMarker.sectionName)): the graph's code would call into stub data, so none runs"
        case let .otherArchitecture(arch): "\(arch) code cannot run on this \(CodeRunner.hostArchitecture) host"
        case let .noMain(path): "\(path) has no LC_MAIN: loaded as a root image, initializers ran, no main to run"
        }
    }
}

/// Why a launch ran no Objective-C step.
package enum ObjCSkipReason: Equatable, Sendable, CustomStringConvertible {
    case noMetadata
    case noRuntime(withMetadata: Int, of: Int, otherRuntime: String?)
    case notInClosure(prelinked: Bool)

    package var description: String {
        switch self {
        case .noMetadata: return "no image has Objective-C metadata (__objc_imageinfo)"
        case let .noRuntime(withMetadata, count, otherRuntime):
            var reason = "\(withMetadata) of \(count) images have Objective-C metadata, but no image is a runtime "
                + "this loader fills in (a libobjc with __DATA,__objc_fxtables)"
            if let otherRuntime { reason += ": \(otherRuntime) is another runtime; a root written by `dyld3 stub-root` holds one" }
            return reason
        case .notInClosure(prelinked: true): return "the set's closure records no Objective-C step"
        case .notInClosure(prelinked: false):
            return "the closure records no Objective-C step (its builder found no metadata or no runtime of ours; "
                + "`dyld3 launch --mode dyld2 --stats` says which)"
        }
    }
}

/// Why a launch asked to page its fixups in wrote them eagerly.
package enum PageInFallback: Equatable, Sendable, CustomStringConvertible {
    case userfaultfdUnavailable(String)
    case setupFailed(String)
    case otherPageSize(UInt64)
    case setUnopenable(String)
    case slidForBoot
    case sharedCache

    package var description: String {
        switch self {
        case let .userfaultfdUnavailable(why): "userfaultfd is not available: \(why)"
        case let .setupFailed(why): "page-in setup failed: \(why)"
        case let .otherPageSize(size): "the set's slide runs are not indexed by \(size)-byte pages"
        case let .setUnopenable(why): "the set cannot be opened for page-in: \(why)"
        case .slidForBoot: "the set's copy slid for this boot was mapped: no slide store is left to page in"
        case .sharedCache: "the set binds into the shared cache, whose words a launch writes once the cache is mapped"
        }
    }
}

/// Why a prelinked launch slid the set itself rather than map its copy slid for this boot.
package enum SlideAtLaunchReason: Equatable, Sendable, CustomStringConvertible {
    case slidePerLaunch
    case trusted
    case noImage
    case threadLocalWriteReadOnly(String)
    case rangeTaken(base: UInt64)
    case slideForced(UInt64)
    case forcedAndUnusable(String)
    case unwritable(unusable: String, error: String)
    case writtenUnopenable
    case sharedCache

    package var description: String {
        switch self {
        case .slidePerLaunch: "--slide-per-launch"
        case .trusted: "--trust: the signature covers the set's own data, not a copy slid for this boot"
        case .noImage: "the set has no image"
        case let .threadLocalWriteReadOnly(what): "the thread-local step writes \(what), read-only after the launch"
        case let .rangeTaken(base): "the range slid for this boot (\(hex(base))) is taken in this process"
        case let .slideForced(slide): "the slide is forced to \(hex(slide)); the copy for this boot is slid elsewhere"
        case let .forcedAndUnusable(why): "the slide is forced, and \(why)"
        case let .unwritable(unusable, error): "\(unusable), and it cannot be written: \(error)"
        case .writtenUnopenable: "the copy just written for this boot cannot be opened"
        case .sharedCache: "the set binds into the shared cache: its words pointing there are written once the cache is mapped"
        }
    }
}

/// Nanosecond stopwatch for launch phases.
package struct PhaseClock: Sendable {
    private let clock = ContinuousClock()
    private var last: ContinuousClock.Instant
    private let start: ContinuousClock.Instant
    /// Time spent in diagnostics (the digest), kept out of every phase and the total.
    private var excluded: Duration = .zero

    package init() {
        start = clock.now
        last = start
    }

    /// Nanoseconds since the previous lap.
    package mutating func lap() -> Int64 {
        let now = clock.now
        defer { last = now }
        return PhaseClock.nanoseconds(now - last)
    }

    /// Nanoseconds since the start, diagnostics excluded.
    package func total() -> Int64 { PhaseClock.nanoseconds(clock.now - start - excluded) }

    /// Runs `body` off the clock: its time counts toward no phase and not toward the total.
    package mutating func excluding<T>(_ body: () throws(LoadError) -> T) throws(LoadError) -> T {
        let before = clock.now
        let result = try body()
        let spent = clock.now - before
        excluded += spent
        last += spent
        return result
    }

    static func nanoseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000
    }
}
