import CXXHash
import CZstd
import Testing
import TestSupport

/// The system-library modules link and behave: closures are zstd-compressed and
/// xxhash-checked, so both libraries must work before anything is built on them.
@Suite(.bounded) struct SystemLibraryTests {
    @Test func xxh3MatchesPublishedVectors() {
        // Reference values from the xxHash specification's test vectors for empty input.
        let empty: [UInt8] = []
        #expect(empty.withUnsafeBytes { XXH3_64bits($0.baseAddress, 0) } == 0x2D06_8005_38D3_94C2)
        #expect(empty.withUnsafeBytes { XXH64($0.baseAddress, 0, 0) } == 0xEF46_DB37_51D8_E999)
        #expect(empty.withUnsafeBytes { XXH32($0.baseAddress, 0, 0) } == 0x02CC_5D05)
    }

    @Test func zstdRoundTrips() throws {
        let input = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 * 7 / 3) }
        var compressed = [UInt8](repeating: 0, count: ZSTD_compressBound(input.count))
        let compressedSize = compressed.withUnsafeMutableBytes { out in
            input.withUnsafeBytes { ZSTD_compress(out.baseAddress, out.count, $0.baseAddress, $0.count, 3) }
        }
        #expect(ZSTD_isError(compressedSize) == 0)
        #expect(compressedSize < input.count / 4)
        var output = [UInt8](repeating: 0, count: input.count)
        let decompressedSize = output.withUnsafeMutableBytes { out in
            compressed.withUnsafeBytes { ZSTD_decompress(out.baseAddress, out.count, $0.baseAddress, compressedSize) }
        }
        #expect(decompressedSize == input.count)
        #expect(output == input)
    }
}
