import LoaderCore

/// The fast path's apply loop over the raw bytes of a run stream: the same decoding as
/// ``FixupRunCursor`` and the same checks as the checked loop
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
        runs.withUnsafeBytes { bytes in
            var stream = RawStream(bytes)
            guard let runCount = stream.count(minimumSize: 3) else { return false }
            let base = writer.base
            var location: UInt64 = 0, target: UInt64 = 0
            for _ in 0..<runCount {
                guard let run = stream.run(after: &location), writer.accepts(start: run.start, last: run.last) else { return false }
                var address = base &+ run.start
                for _ in 0..<run.count {
                    guard let delta = stream.sleb() else { return false }
                    target &+= delta
                    let offset = target & 0x00ff_ffff_ffff_ffff
                    guard offset < vmSize else { return false }
                    store((base &+ offset) | (target & 0xff00_0000_0000_0000), at: address)
                    address &+= run.stride
                }
            }
            return stream.atEnd
        }
    }

    /// Bind stream `runs` for the image `writer` writes; each entry's target index into
    /// `targetValues`.
    static func applyBinds(_ runs: ArraySlice<UInt8>, writer: ImageWriter, targetValues: [UInt64]) -> Bool {
        runs.withUnsafeBytes { bytes in
            targetValues.withUnsafeBufferPointer { values in
                var stream = RawStream(bytes)
                guard let runCount = stream.count(minimumSize: 3) else { return false }
                let targetCount = UInt64(values.count)
                var location: UInt64 = 0
                for _ in 0..<runCount {
                    guard let run = stream.run(after: &location), writer.accepts(start: run.start, last: run.last) else { return false }
                    var address = writer.base &+ run.start
                    for _ in 0..<run.count {
                        guard let index = stream.uleb(), index < targetCount, let addend = stream.sleb() else { return false }
                        store(values[Int(index)] &+ addend, at: address)
                        address &+= run.stride
                    }
                }
                return stream.atEnd
            }
        }
    }

    @inline(__always)
    private static func store(_ value: UInt64, at address: UInt64) {
        UnsafeMutableRawPointer(bitPattern: UInt(address))!.storeBytes(of: value, as: UInt64.self)
    }

    /// A run's header as ``FixupRunCursor/nextRun()`` reads and checks it.
    struct Run {
        let start: UInt64
        let count: Int
        let stride: UInt64
        let last: UInt64
    }

    /// A stream's bytes read through a pointer: every read compares against the end first.
    struct RawStream {
        private var cursor: UnsafeRawPointer?
        private let end: UnsafeRawPointer?

        init(_ bytes: UnsafeRawBufferPointer) {
            cursor = bytes.baseAddress
            end = bytes.baseAddress.map { $0 + bytes.count }
        }

        var atEnd: Bool { cursor == end }

        /// An unsigned LEB128 number, or nil when truncated or over 64 bits.
        @inline(__always)
        mutating func uleb() -> UInt64? {
            guard let start = cursor, let end, start < end else { return nil }
            let first = start.load(as: UInt8.self)
            if first < 0x80 {
                cursor = start + 1
                return UInt64(first)
            }
            var pointer = start
            var result: UInt64 = 0
            var shift: UInt64 = 0
            while pointer < end {
                let byte = pointer.load(as: UInt8.self)
                pointer += 1
                guard shift < 64, !(shift == 63 && byte & 0x7e != 0) else { return nil }
                result |= UInt64(byte & 0x7f) << shift
                if byte & 0x80 == 0 {
                    cursor = pointer
                    return result
                }
                shift += 7
            }
            return nil
        }

        /// A signed LEB128 number (as its two's-complement bits), or nil when truncated or over 64 bits.
        @inline(__always)
        mutating func sleb() -> UInt64? {
            guard let start = cursor, let end, start < end else { return nil }
            let first = start.load(as: UInt8.self)
            if first < 0x80 {
                cursor = start + 1
                return UInt64(bitPattern: Int64(Int8(bitPattern: first << 1) >> 1))
            }
            var pointer = start
            var result: Int64 = 0
            var shift: Int64 = 0
            var byte: UInt8
            repeat {
                guard pointer < end, shift < 64 else { return nil }
                byte = pointer.load(as: UInt8.self)
                pointer += 1
                result |= Int64(byte & 0x7f) << shift
                shift += 7
            } while byte & 0x80 != 0
            if shift < 64, byte & 0x40 != 0 { result |= -1 << shift }
            cursor = pointer
            return UInt64(bitPattern: result)
        }

        /// A count of items of at least `minimumSize` bytes each, no more than the bytes left hold.
        @inline(__always)
        mutating func count(minimumSize: Int = 1) -> Int? {
            guard let value = uleb(), let cursor, let end, value <= UInt64((end - cursor) / minimumSize) else { return nil }
            return Int(value)
        }

        /// The next run's header: start (a delta from `location`, the previous run's last
        /// location, which it updates), count, stride; nil for an empty or overflowing run.
        @inline(__always)
        mutating func run(after location: inout UInt64) -> Run? {
            guard let delta = uleb(), let count = count(), count > 0, let stride = uleb() else { return nil }
            let (start, overflow) = location.addingReportingOverflow(delta)
            let (span, spanOverflow) = UInt64(count - 1).multipliedReportingOverflow(by: stride)
            let (last, lastOverflow) = start.addingReportingOverflow(span)
            guard !overflow, !spanOverflow, !lastOverflow else { return nil }
            location = last
            return Run(start: start, count: count, stride: stride, last: last)
        }
    }
}
