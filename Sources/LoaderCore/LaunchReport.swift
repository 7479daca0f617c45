import LaunchPlan
import RuntimeServices

/// What a launch did, for `--stats`, `--json`, `compare` and the benchmarks. Both launch
/// paths fill the same report.
public struct LaunchReport: Sendable {
    /// The phases of a launch, in order.
    public enum Phase: String, CaseIterable, Sendable {
        case closure, pathResolution = "path_resolution", parsing, mapping, rebase, bind, objc
        case initializers, main, total
    }

    public var mode: String
    /// Image paths in load order.
    public var images: [String] = []
    public var rebases = 0
    public var binds = 0
    public var symbolLookups = 0
    /// The main (first) image's slide.
    public var slide: UInt64 = 0
    public var timings: [Phase: Int64] = [:]
    /// Whether main ran, and what it returned.
    public var ran = false
    public var result: Int32?
    /// Why code did not run, when it did not.
    public var notRunReason: String?
    /// Why the Objective-C step did not run, when it did not (no metadata, or no runtime
    /// of ours to fill in); nil when it ran.
    public var objcSkippedReason: String?
    /// Image paths in the order their initializers ran.
    public var initializers: [String] = []
    /// What the launch's code opened with `dlopen`, in order.
    public var dynamicLoads: [DynamicLoadEvent] = []
    /// xxh3 of every writable segment after fixups, slide-independent; nil for a page-in
    /// launch (computing it would fault every page in).
    public var digest: UInt64? = 0
    /// How fixups were written: `eager` or `page-in`.
    public var fixupsMode: FixupsMode = .eager
    /// Why a page-in launch was asked for but fixups were written eagerly.
    public var fixupsFallbackReason: String?
    /// Page-in: pages indexed, and bytes registered with the handler.
    public var fixupPages = 0
    public var registeredBytes: UInt64 = 0
    /// Page-in: pages the handler had filled when the launch returned (after main, if it ran).
    public var pagesFilled = 0
    /// dyld3: how many images' content was hashed to confirm their identity (stat differed,
    /// the identity is racy or content-only, or `--hash-images`); nil for dyld2.
    public var imagesHashed: Int?
    /// dyld3 `--verify-pages`: the pages of signed images checked against their code slots
    /// after mapping (timed in the `parsing` phase, where dyld2 verifies); nil otherwise.
    public var pagesVerified: Int?
    /// A prelinked launch: whether it mapped the set slid for this boot (and stored no
    /// slide), whether it wrote that copy first, and when it slid the set at launch instead,
    /// why; false and nil for the other modes.
    public var slidForBoot = false
    public var slidSetWritten = false
    public var slideAtLaunchReason: String?

    public init(mode: String) { self.mode = mode }
}

/// Nanosecond stopwatch for launch phases.
public struct PhaseClock: Sendable {
    private let clock = ContinuousClock()
    private var last: ContinuousClock.Instant
    private let start: ContinuousClock.Instant
    /// Time spent in diagnostics (the digest), kept out of every phase and the total.
    private var excluded: Duration = .zero

    public init() {
        start = clock.now
        last = start
    }

    /// Nanoseconds since the previous lap (or the start).
    public mutating func lap() -> Int64 {
        let now = clock.now
        defer { last = now }
        return PhaseClock.nanoseconds(now - last)
    }

    /// Nanoseconds since the start, diagnostics excluded.
    public func total() -> Int64 { PhaseClock.nanoseconds(clock.now - start - excluded) }

    /// Runs `body` off the clock: its time counts toward no phase and not toward the total.
    public mutating func excluding<T>(_ body: () throws(LoadError) -> T) throws(LoadError) -> T {
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
