import CZstd
import MachOReader

/// zstd through libzstd: the only place the closure code hands it raw buffers.
enum UnsafeCompression {
    /// Compresses `bytes` at a fixed level (reproducible output), with literals stored raw:
    /// a closure body is mostly LEB128 numbers, whose Huffman-coded literals halve zstd's
    /// decoding speed for an 18% smaller file (docs/performance.md, "The closure's frame").
    static func compress(_ bytes: [UInt8]) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: ZSTD_compressBound(bytes.count))
        let context = ZSTD_createCCtx()
        defer { ZSTD_freeCCtx(context) }
        let level = ZSTD_CCtx_setParameter(context, ZSTD_c_compressionLevel, 9)
        // ZSTD_c_literalCompressionMode is a C macro for this parameter, which Swift does not import.
        let literals = ZSTD_CCtx_setParameter(context, ZSTD_c_experimentalParam5, Int32(ZSTD_ps_disable.rawValue))
        precondition(ZSTD_isError(level) == 0 && ZSTD_isError(literals) == 0, "libzstd accepts these parameters since 1.4.5")
        let size = output.withUnsafeMutableBytes { out in
            bytes.withUnsafeBytes { ZSTD_compress2(context, out.baseAddress, out.count, $0.baseAddress, $0.count) }
        }
        precondition(ZSTD_isError(size) == 0, "zstd cannot fail on a buffer of compressBound size")
        return Array(output[0..<size])
    }

    /// Decompresses one frame that must expand to exactly `expectedSize` bytes; nil if the
    /// frame is damaged or would expand to any other size (a bomb cannot allocate more).
    /// The frame is read in place (a mapped closure file is not copied) and the output is
    /// not zeroed first: zstd writes every byte of it, or the result is refused.
    static func decompress(_ frame: ByteView, expectedSize: Int) -> [UInt8]? {
        frame.withUnsafeBytes { frame -> [UInt8]? in
            guard ZSTD_getFrameContentSize(frame.baseAddress, frame.count) == UInt64(expectedSize) else { return nil }
            var complete = false
            let output = [UInt8](unsafeUninitializedCapacity: expectedSize) { out, initialized in
                let size = ZSTD_decompress(out.baseAddress, out.count, frame.baseAddress, frame.count)
                complete = ZSTD_isError(size) == 0 && size == expectedSize
                // zstd wrote `size` bytes; a short or failed frame leaves none counted as initialized.
                initialized = complete ? expectedSize : 0
            }
            return complete ? output : nil
        }
    }
}
