import LaunchPlan

/// The one checked walker of the fixup-run format (docs/closure-format.md, "Fixup runs"), in
/// dyld's `forEach…(block)` shape: it decodes and checks each run header (a count bounded by
/// the bytes left, not empty, no overflow) and hands it to `run` before any of its entries,
/// then hands over each entry; a whole stream must end at its last run. Whatever a visitor
/// throws stops the walk and is what the walk throws.
///
/// Every consumer of the format walks through here: the eager apply's checked loop and the
/// page-in handler (which store), decoding, verification and the page index (which read).
/// Its faults are ``FixupFault``s, built without allocation. ``UnsafeFixupLoop`` is the one
/// twin, the eager launch's pointer loop over the same bytes, differential-tested against it.
///
/// A stream's layout, all numbers LEB128:
///
///     uleb runCount, then per run:
///       uleb locationDelta   (from the previous run's last location; 0 at the start)
///       uleb count           (≥ 1)
///       uleb stride
///       count entries:  rebase runs: sleb targetDelta (a RebaseTarget's bits, from the
///                                    stream's previous target; 0 at the start)
///                       bind runs:   uleb targetIndex, sleb addend
public struct FixupRunWalk {
    /// The fewest bytes a run takes (delta, count and stride, a byte each): what bounds a
    /// stream's run count by its length.
    public static let minimumRunSize = 3
    /// The bytes every fixup writes.
    public static let storeSize: UInt64 = 8

    let runs: ArraySlice<UInt8>
    let restart: FixupRestart?

    /// A walk of a whole stream (its run count first, nothing after its last run).
    public init(_ runs: ArraySlice<UInt8>) {
        self.runs = runs
        restart = nil
    }

    /// A walk of one page's runs of a stream, from the page index's restart point: the byte
    /// offset of the page's first run header, the delta state there and the page's run count.
    public init(_ runs: ArraySlice<UInt8>, restart: FixupRestart) {
        self.runs = runs
        self.restart = restart
    }

    /// Walks a rebase stream: `run` gets each run and the restart point before it (the
    /// stream's state there, as the page index records it), `rebase` each location and target.
    @inline(__always)
    public func forEachRebase(run visitRun: (_ run: FixupRun, _ before: FixupRestart) throws(FixupFault) -> Void = { _, _ in },
                              _ rebase: (_ location: UInt64, _ target: RebaseTarget) throws(FixupFault) -> Void) throws(FixupFault) {
        var target = restart?.target ?? 0
        try walk { (run, offset, location) throws(FixupFault) in
            try visitRun(run, FixupRestart(runs: 1, offset: offset, location: location, target: target))
        } entries: { (run, reader) throws(FixupFault) in
            var location = run.start
            for _ in 0..<run.count {
                target &+= UInt64(bitPattern: try reader.sleb())
                try rebase(location, RebaseTarget(bits: target))
                location &+= run.stride
            }
        }
    }

    /// Walks a bind stream: `run` gets each run and the restart point before it, `bind` each
    /// location, target index (not checked against any table: the visitor knows the table)
    /// and addend.
    @inline(__always)
    public func forEachBind(run visitRun: (_ run: FixupRun, _ before: FixupRestart) throws(FixupFault) -> Void = { _, _ in },
                            _ bind: (_ location: UInt64, _ targetIndex: UInt64, _ addend: Int64) throws(FixupFault) -> Void) throws(FixupFault) {
        try walk { (run, offset, location) throws(FixupFault) in
            try visitRun(run, FixupRestart(runs: 1, offset: offset, location: location, target: 0))
        } entries: { (run, reader) throws(FixupFault) in
            var location = run.start
            for _ in 0..<run.count {
                let index = try reader.uleb()
                try bind(location, index, try reader.sleb())
                location &+= run.stride
            }
        }
    }

    /// The runs, each header checked, handed to `run` with its header's offset in the stream
    /// and the previous run's last location, then to `entries` to read its entries.
    @inline(__always)
    func walk(run visitRun: (_ run: FixupRun, _ offset: Int, _ previousLocation: UInt64) throws(FixupFault) -> Void,
              entries: (_ run: FixupRun, _ reader: inout FixupStreamReader) throws(FixupFault) -> Void) throws(FixupFault) {
        var reader = FixupStreamReader(runs)
        var runsLeft: Int
        var location: UInt64
        if let restart {
            guard restart.offset >= 0, restart.offset <= runs.count else {
                throw .corrupt(byteOffset: runs.startIndex, .restartPastEnd)
            }
            reader.position = runs.startIndex + restart.offset
            runsLeft = restart.runs
            location = restart.location
        } else {
            runsLeft = try reader.count(minimumSize: Self.minimumRunSize, else: .runCountTooLarge)
            location = 0
        }
        while runsLeft > 0 {
            runsLeft -= 1
            let header = reader.position
            let (start, overflow) = location.addingReportingOverflow(try reader.uleb())
            let count = try reader.count(minimumSize: 1, else: .entryCountTooLarge)
            let stride = try reader.uleb()
            guard count > 0 else { throw .corrupt(byteOffset: header, .emptyRun) }
            guard !overflow, let run = FixupRun(start: start, count: count, stride: stride) else {
                throw .corrupt(byteOffset: header, .runOverflows)
            }
            try visitRun(run, header - runs.startIndex, location)
            location = run.last
            try entries(run, &reader)
        }
        if restart == nil, reader.position != runs.endIndex {
            throw .corrupt(byteOffset: reader.position, .bytesAfterLastRun)
        }
    }
}

/// LEB128 numbers of a run stream, every read checked against the end; a failure is a
/// ``FixupFault`` naming the offset (the slice's own index: an offset in the closure body).
struct FixupStreamReader {
    let bytes: ArraySlice<UInt8>
    var position: Int

    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        position = bytes.startIndex
    }

    @inline(__always)
    mutating func uleb() throws(FixupFault) -> UInt64 {
        switch ClosureLEB128.unsigned(bytes, &position) {
        case let .success(value): return value
        case let .failure(fault): throw fault
        }
    }

    @inline(__always)
    mutating func sleb() throws(FixupFault) -> Int64 {
        switch ClosureLEB128.signed(bytes, &position) {
        case let .success(value): return value
        case let .failure(fault): throw fault
        }
    }

    /// A count of items of at least `minimumSize` bytes each, no more than the bytes left hold.
    @inline(__always)
    mutating func count(minimumSize: Int, else corruption: FixupFault.Corruption) throws(FixupFault) -> Int {
        let start = position
        let value = try uleb()
        guard value <= UInt64((bytes.endIndex - position) / minimumSize) else { throw .corrupt(byteOffset: start, corruption) }
        return Int(value)
    }
}
