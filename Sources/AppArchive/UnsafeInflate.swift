import CZlib

/// zlib's raw inflate and crc32, the archive reader's pointer code beside its system calls (`UnsafeFileAt`).
enum UnsafeInflate {
    /// `input`, a raw deflate stream (zip method 8), inflated into exactly `size` bytes; nil
    /// when the stream is malformed, ends before `size` bytes or holds more. The output
    /// buffer is `size + 1` bytes: a stream longer than declared fills the extra byte
    /// instead of growing anything.
    static func inflate(_ input: [UInt8], size: Int) -> [UInt8]? {
        guard size < Int(UInt32.max), input.count < Int(UInt32.max) else { return nil }
        var stream = unsafe z_stream()
        guard unsafe inflateInit2_(&stream, -MAX_WBITS, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else { return nil }
        defer { unsafe inflateEnd(&stream) }
        var input = input
        var output = [UInt8](repeating: 0, count: size + 1)
        let status: Int32 = unsafe input.withUnsafeMutableBufferPointer { inBuffer in
            unsafe output.withUnsafeMutableBufferPointer { outBuffer in
                unsafe stream.next_in = inBuffer.baseAddress
                unsafe stream.avail_in = UInt32(inBuffer.count)
                unsafe stream.next_out = outBuffer.baseAddress
                unsafe stream.avail_out = UInt32(outBuffer.count)
                return unsafe CZlib.inflate(&stream, Z_FINISH)
            }
        }
        guard status == Z_STREAM_END, unsafe Int(stream.total_out) == size else { return nil }
        output.removeLast()
        return output
    }

    /// The CRC-32 zip records for an entry's unpacked bytes.
    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        unsafe bytes.withUnsafeBufferPointer { buffer in
            unsafe UInt32(CZlib.crc32(0, buffer.baseAddress, UInt32(buffer.count)))
        }
    }
}
