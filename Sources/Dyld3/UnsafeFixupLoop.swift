import LoaderCore
import LaunchPlan
import ClosureFormat
import ClosureCache
import LaunchMemory

/// The fast path's apply loop over the raw bytes of a run stream: the same decoding as
/// ``FixupRunWalk`` and the same checks as the checked loop
/// (``LaunchClosure/applyFixups(ofImage:memory:targetValues:closurePath:)``), with one
/// pointer compare per byte instead of a slice's index checks, and the stores written
/// straight into the run the writer accepted.
///
/// It answers only for streams it can apply whole: at the first thing it cannot decode or
/// accept (a truncated or oversized number, an empty or overflowing run, a run outside
/// every writable segment, a rebase target outside the image, a bind target past the
/// table, bytes after the last run) it stops and returns false, and the caller runs the
/// checked loop over the same stream, which names the offset and what is wrong. Nothing is
/// ever stored outside a run the writer accepted, so the stores made before it stopped are
/// ones the checked loop makes again (the same values at the same places).
enum UnsafeFixupLoop {
    /// Rebase stream `runs` for the image `writer` writes, its address space `vmSize` bytes.
    static func applyRebases(_ runs: ArraySlice<UInt8>, writer: ImageWriter, vmSize: UInt64) -> Bool {
        unsafe runs.withUnsafeBytes { bytes in
            var stream = unsafe UnsafeRawStream(bytes)
            guard let runCount = stream.count(minimumSize: FixupRunWalk.minimumRunSize) else { return false }
            let base = writer.base
            var location: UInt64 = 0, target: UInt64 = 0
            for _ in 0..<runCount {
                guard let run = stream.run(after: &location), writer.accepts(run) else { return false }
                var address = base &+ run.start
                for _ in 0..<run.count {
                    guard let delta = stream.sleb() else { return false }
                    target &+= delta
                    let rebase = RebaseTarget(bits: target)
                    guard rebase.offset < vmSize else { return false }
                    store(rebase.value(imageBase: base), at: address)
                    address &+= run.stride
                }
            }
            return stream.atEnd
        }
    }

    /// Bind stream `runs` for the image `writer` writes; each entry's target index into
    /// `targetValues`.
    static func applyBinds(_ runs: ArraySlice<UInt8>, writer: ImageWriter, targetValues: [UInt64]) -> Bool {
        unsafe runs.withUnsafeBytes { bytes in
            unsafe targetValues.withUnsafeBufferPointer { values in
                var stream = unsafe UnsafeRawStream(bytes)
                guard let runCount = stream.count(minimumSize: FixupRunWalk.minimumRunSize) else { return false }
                let targetCount = UInt64(values.count)
                var location: UInt64 = 0
                for _ in 0..<runCount {
                    guard let run = stream.run(after: &location), writer.accepts(run) else { return false }
                    var address = writer.base &+ run.start
                    for _ in 0..<run.count {
                        guard let index = stream.uleb(), index < targetCount, let addend = stream.sleb() else { return false }
                        unsafe store(values[Int(index)] &+ addend, at: address)
                        address &+= run.stride
                    }
                }
                return stream.atEnd
            }
        }
    }

    @inline(__always)
    private static func store(_ value: UInt64, at address: UInt64) {
        unsafe UnsafeMutableRawPointer(bitPattern: UInt(address))!.storeBytes(of: value, as: UInt64.self)
    }
}
