import CZstd
import LaunchPlan
import MachOReader
import Synchronization

/// zstd through libzstd: the only place the closure code hands it raw buffers.
enum UnsafeCompression {
    /// Bodies of at least this many bytes are written as two frames, one per half, which
    /// a launch decodes at once on two cores (``LaunchHelper``); smaller ones as one frame.
    static let twoFrameThreshold = 256 * 1024

    /// Compresses `bytes` at a fixed level (reproducible output), literals stored raw: a body is
    /// mostly LEB128 numbers, whose Huffman-coded literals halve zstd's decoding speed for an 18%
    /// smaller file (docs/performance.md, "The closure's frame"). A body that starts the launch's
    /// helper (``ClosureFile/helperThreshold``) at level 1: its runs compress little below level
    /// 19 (1.15× at 1, 1.28× at 9, for 400 frameworks) and level 1 decodes four times as fast.
    /// Smaller bodies, where paths weigh more, at level 9. Two frames from ``twoFrameThreshold``.
    static func compress(_ bytes: [UInt8]) -> [UInt8] {
        let level: Int32 = bytes.count >= ClosureFile.helperThreshold ? 1 : 9
        guard bytes.count >= twoFrameThreshold else { return compressFrame(bytes[...], level: level) }
        let middle = bytes.count / 2
        return compressFrame(bytes[..<middle], level: level) + compressFrame(bytes[middle...], level: level)
    }

    /// One zstd frame holding `bytes` at `level`, its content size in its header.
    private static func compressFrame(_ bytes: ArraySlice<UInt8>, level: Int32) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: ZSTD_compressBound(bytes.count))
        let context = unsafe ZSTD_createCCtx()
        defer { unsafe ZSTD_freeCCtx(context) }
        let levelSet = unsafe ZSTD_CCtx_setParameter(context, ZSTD_c_compressionLevel, level)
        // ZSTD_c_literalCompressionMode is a C macro for this parameter, which Swift does not import.
        let literals = unsafe ZSTD_CCtx_setParameter(context, ZSTD_c_experimentalParam5, Int32(ZSTD_ps_disable.rawValue))
        precondition(ZSTD_isError(levelSet) == 0 && ZSTD_isError(literals) == 0, "libzstd accepts these parameters since 1.4.5")
        let size = unsafe output.withUnsafeMutableBytes { out in
            unsafe bytes.withUnsafeBytes { unsafe ZSTD_compress2(context, out.baseAddress, out.count, $0.baseAddress, $0.count) }
        }
        precondition(ZSTD_isError(size) == 0, "zstd cannot fail on a buffer of compressBound size")
        return Array(output[0..<size])
    }

}

/// The one or two frames of a closure's compressed data, found and checked, decoded into the
/// two parts of one body in whichever order, on whichever threads, the reader chooses; or a
/// stored body, copied. Read in place; the output is not zeroed first (zstd writes every byte of
/// it, or it is refused).
package struct ClosureFrames: @unchecked Sendable {
    let data: ByteView
    let firstLength: Int
    let firstSize: Int
    let hasSecond: Bool
    let expectedSize: Int
    let stored: Bool

    /// The frames of `data`, nil unless they cover it exactly and declare contents adding up
    /// to `expectedSize`, split where the writer splits. `stored`: `data` is the body itself,
    /// nil unless it has `expectedSize` bytes.
    package init?(_ data: ByteView, expectedSize: Int, stored: Bool = false) {
        if stored {
            guard data.count == expectedSize else { return nil }
            (firstLength, firstSize, hasSecond) = (data.count, expectedSize, false)
        } else {
            guard let pair = unsafe data.withUnsafeBytes({ unsafe FramePair($0, expectedSize: expectedSize) }) else { return nil }
            firstLength = unsafe pair.first.count
            firstSize = pair.firstSize
            hasSecond = unsafe pair.second != nil
        }
        self.data = data
        self.expectedSize = expectedSize
        self.stored = stored
    }

    /// One frame's decoding into its part of the output: it stays valid while
    /// ``decompress(_:)`` runs, and no two jobs share output bytes.
    @safe package struct Job: @unchecked Sendable {
        let source: UnsafeRawBufferPointer
        let output: UnsafeMutableRawBufferPointer
        let stored: Bool

        /// Decodes the frame (copies a stored body); whether it filled its output exactly.
        package func callAsFunction() -> Bool {
            if stored {
                guard unsafe source.count == output.count else { return false }
                unsafe output.copyMemory(from: source)
                return true
            }
            guard let context = unsafe DecompressionContexts.take() else { return false }
            defer { unsafe DecompressionContexts.give(context) }
            let size = unsafe ZSTD_decompressDCtx(context, output.baseAddress, output.count, source.baseAddress, source.count)
            return unsafe ZSTD_isError(size) == 0 && size == output.count
        }
    }

    /// The body, or nil when a frame does not fill its part exactly. `run` is given the first
    /// frame's job and the second's (nil for one frame), runs both (by default on this thread,
    /// one after the other) before it returns, and answers whether both succeeded.
    package func decompress(_ run: (_ first: Job, _ second: Job?) -> Bool = { $0() && ($1?() ?? true) }) -> [UInt8]? {
        unsafe data.withUnsafeBytes { data -> [UInt8]? in
            var complete = false
            let output = unsafe [UInt8](unsafeUninitializedCapacity: expectedSize) { out, initialized in
                let output = UnsafeMutableRawBufferPointer(out)
                let first = unsafe Job(source: UnsafeRawBufferPointer(rebasing: data[..<firstLength]),
                                output: UnsafeMutableRawBufferPointer(rebasing: output[..<(hasSecond ? firstSize : expectedSize)]), stored: stored)
                let second = unsafe hasSecond ? Job(source: UnsafeRawBufferPointer(rebasing: data[firstLength...]),
                                             output: UnsafeMutableRawBufferPointer(rebasing: output[firstSize...]), stored: false) : nil
                complete = run(first, second)
                // zstd wrote every byte; a short or failed frame leaves none counted as initialized.
                initialized = complete ? expectedSize : 0
            }
            return complete ? output : nil
        }
    }
}

/// The one or two frames of a closure's compressed data, each found by its own header:
/// nil unless they cover the data exactly and declare contents adding up to the body size,
/// split where the writer splits (the first half, rounded down, in the first).
@safe private struct FramePair {
    let first: UnsafeRawBufferPointer
    let firstSize: Int
    let second: UnsafeRawBufferPointer?

    init?(_ data: UnsafeRawBufferPointer, expectedSize: Int) {
        guard let (firstLength, firstSize) = unsafe Self.frame(at: data, limit: expectedSize) else { return nil }
        unsafe first = unsafe UnsafeRawBufferPointer(rebasing: data[..<firstLength])
        self.firstSize = firstSize
        if firstLength == data.count {
            guard firstSize == expectedSize else { return nil }
            unsafe second = nil
        } else {
            // The writer's split: the first frame holds the body's first half, rounded down.
            guard firstSize == expectedSize / 2 else { return nil }
            let rest = unsafe UnsafeRawBufferPointer(rebasing: data[firstLength...])
            guard let (secondLength, secondSize) = unsafe Self.frame(at: rest, limit: expectedSize - firstSize),
                  secondLength == rest.count, firstSize + secondSize == expectedSize else { return nil }
            unsafe second = unsafe rest
        }
    }

    /// The compressed length and declared content size of the frame starting `data`; nil
    /// when it is no frame, declares no size, or declares more than `limit`.
    private static func frame(at data: UnsafeRawBufferPointer, limit: Int) -> (length: Int, contentSize: Int)? {
        let length = unsafe ZSTD_findFrameCompressedSize(data.baseAddress, data.count)
        let size = unsafe ZSTD_getFrameContentSize(data.baseAddress, data.count)
        guard ZSTD_isError(length) == 0, length > 0, length <= data.count, size <= UInt64(limit) else { return nil }
        return (length, Int(size))
    }
}

/// zstd decoding contexts kept for the next frame: `ZSTD_decompress` makes and frees one per
/// call, an allocation of about 100 KiB that glibc maps and unmaps each time (10–20 µs of a
/// small closure's launch). One per frame decoded at once (two at most); their state is reset
/// by every `ZSTD_decompressDCtx`.
private enum DecompressionContexts {
    /// Idle contexts, by address.
    private static let idle = Mutex<[UInt]>([])

    static func take() -> OpaquePointer? {
        if let address = idle.withLock({ $0.popLast() }) { return unsafe OpaquePointer(bitPattern: address) }
        return unsafe ZSTD_createDCtx()
    }

    static func give(_ context: OpaquePointer) {
        let address = UInt(bitPattern: context)
        let kept = idle.withLock { idle -> Bool in
            guard idle.count < 2 else { return false }
            idle.append(address)
            return true
        }
        if !kept { unsafe ZSTD_freeDCtx(context) }
    }
}
