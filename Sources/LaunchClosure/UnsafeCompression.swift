import CZstd

/// zstd through libzstd: the only place the closure code hands it raw buffers.
enum UnsafeCompression {
    /// Compresses `bytes` at a fixed level (reproducible output).
    static func compress(_ bytes: [UInt8]) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: ZSTD_compressBound(bytes.count))
        let size = output.withUnsafeMutableBytes { out in
            bytes.withUnsafeBytes { ZSTD_compress(out.baseAddress, out.count, $0.baseAddress, $0.count, 9) }
        }
        precondition(ZSTD_isError(size) == 0, "zstd cannot fail on a buffer of compressBound size")
        return Array(output[0..<size])
    }

    /// Decompresses one frame that must expand to exactly `expectedSize` bytes; nil if the
    /// frame is damaged or would expand to any other size (a bomb cannot allocate more).
    static func decompress(_ frame: ArraySlice<UInt8>, expectedSize: Int) -> [UInt8]? {
        let declared = frame.withUnsafeBytes { ZSTD_getFrameContentSize($0.baseAddress, $0.count) }
        guard declared == UInt64(expectedSize) else { return nil }
        var output = [UInt8](repeating: 0, count: expectedSize)
        let size = output.withUnsafeMutableBytes { out in
            frame.withUnsafeBytes { ZSTD_decompress(out.baseAddress, out.count, $0.baseAddress, $0.count) }
        }
        guard ZSTD_isError(size) == 0, size == expectedSize else { return nil }
        return output
    }
}
