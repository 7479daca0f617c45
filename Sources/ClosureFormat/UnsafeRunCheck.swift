import LaunchPlan

/// The page-in check's pointer loop (``LaunchClosure/checkFixups(ofImage:)``): the same
/// decoding as ``FixupRunWalk`` and the same checks as its checked visitor (each run inside a
/// writable segment, each rebase target inside the image, each bind target index in the
/// table, nothing after the last run), with one pointer compare per byte, and each run's
/// restart point handed to the page collector as the walk hands it. It answers only for
/// streams it accepts whole; anything else returns false and the checked walk names it.
enum UnsafeRunCheck {
    /// Whether rebase stream `runs` passes, its runs inside `writable`, its targets below `vmSize`.
    static func rebases(_ runs: ArraySlice<UInt8>, writable: WritableRanges, vmSize: UInt64,
                        pages: inout FixupPageIndex.Collector) -> Bool {
        unsafe runs.withUnsafeBytes { bytes in
            var stream = unsafe UnsafeRawStream(bytes)
            guard let runCount = stream.count(minimumSize: FixupRunWalk.minimumRunSize) else { return false }
            var location: UInt64 = 0, target: UInt64 = 0
            for _ in 0..<runCount {
                let before = FixupRestart(runs: 1, offset: stream.consumed, location: location, target: target)
                guard let run = stream.run(after: &location), writable.accepts(run) else { return false }
                pages.add(run, before: before)
                for _ in 0..<run.count {
                    guard let delta = stream.sleb() else { return false }
                    target &+= delta
                    guard RebaseTarget(bits: target).offset < vmSize else { return false }
                }
            }
            return stream.atEnd
        }
    }

    /// Whether bind stream `runs` passes, its runs inside `writable`, its target indices below `tableSize`.
    static func binds(_ runs: ArraySlice<UInt8>, writable: WritableRanges, tableSize: Int,
                      pages: inout FixupPageIndex.Collector) -> Bool {
        unsafe runs.withUnsafeBytes { bytes in
            var stream = unsafe UnsafeRawStream(bytes)
            guard let runCount = stream.count(minimumSize: FixupRunWalk.minimumRunSize) else { return false }
            let limit = UInt64(tableSize)
            var location: UInt64 = 0
            for _ in 0..<runCount {
                let before = FixupRestart(runs: 1, offset: stream.consumed, location: location, target: 0)
                guard let run = stream.run(after: &location), writable.accepts(run) else { return false }
                pages.add(run, before: before)
                for _ in 0..<run.count {
                    guard let index = stream.uleb(), index < limit, stream.sleb() != nil else { return false }
                }
            }
            return stream.atEnd
        }
    }
}
