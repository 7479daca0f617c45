import LoaderCore
import LaunchPlan
import ClosureFormat
import Pager

/// Page-in's apply loop for one page over the raw bytes of its runs, from the page index's
/// restart points: the decoding of ``FixupRunWalk`` (from a restart) and the checks of the
/// checked page fill (``PageInFixups/applyFixups(image:to:)``: each run on the page, each
/// rebase target inside the image, each bind index in the table), with one pointer compare
/// per byte instead of a slice's index checks and no closure per entry. The fault path's
/// first try: at the first thing it cannot decode or accept it returns false and the checked
/// walk runs over the same runs, naming what is wrong. Every store goes through the page's
/// own bounds check, so nothing lands off the page whatever the bytes say; the stores made
/// before it stopped are ones the checked walk makes again.
enum UnsafePageFixupLoop {
    /// The rebase runs of `runs` that lie on `page`, from `restart`.
    @inline(__always)
    static func applyRebases(_ runs: ArraySlice<UInt8>, restart: FixupRestart, to page: PageBuffer, vmSize: UInt64) -> Bool {
        guard restart.runs > 0 else { return true }
        guard restart.offset >= 0, restart.offset < runs.count else { return false }
        return unsafe runs.withUnsafeBytes { bytes in
            var stream = unsafe UnsafeRawStream(UnsafeRawBufferPointer(rebasing: bytes[restart.offset...]))
            let base = page.imageBase
            var location = restart.location, target = restart.target
            for _ in 0..<restart.runs {
                guard let run = stream.run(after: &location), page.contains(run) else { return false }
                var offset = run.start
                for _ in 0..<run.count {
                    guard let delta = stream.sleb() else { return false }
                    target &+= delta
                    let rebase = RebaseTarget(bits: target)
                    guard rebase.offset < vmSize, page.storeOnPage(rebase.value(imageBase: base), atImageOffset: offset) else { return false }
                    offset &+= run.stride
                }
            }
            return true
        }
    }

    /// The bind runs of `runs` that lie on `page`, from `restart`; each entry's target index
    /// into `targetValues`.
    @inline(__always)
    static func applyBinds(_ runs: ArraySlice<UInt8>, restart: FixupRestart, to page: PageBuffer, targetValues: [UInt64]) -> Bool {
        guard restart.runs > 0 else { return true }
        guard restart.offset >= 0, restart.offset < runs.count else { return false }
        return unsafe runs.withUnsafeBytes { bytes in
            unsafe targetValues.withUnsafeBufferPointer { values in
                var stream = unsafe UnsafeRawStream(UnsafeRawBufferPointer(rebasing: bytes[restart.offset...]))
                let targetCount = UInt64(values.count)
                var location = restart.location
                for _ in 0..<restart.runs {
                    guard let run = stream.run(after: &location), page.contains(run) else { return false }
                    var offset = run.start
                    for _ in 0..<run.count {
                        guard let index = stream.uleb(), index < targetCount, let addend = stream.sleb(),
                              unsafe page.storeOnPage(values[Int(index)] &+ addend, atImageOffset: offset) else { return false }
                        offset &+= run.stride
                    }
                }
                return true
            }
        }
    }
}
