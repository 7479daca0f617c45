import CXXHash

/// xxh3-64 through libxxhash: the only place the loader hands it raw bytes.
public enum UnsafeHash {
    public static func xxh3(_ bytes: [UInt8]) -> UInt64 {
        bytes.withUnsafeBytes { XXH3_64bits($0.baseAddress, $0.count) }
    }

    public static func xxh3(_ bytes: ArraySlice<UInt8>) -> UInt64 {
        bytes.withUnsafeBytes { XXH3_64bits($0.baseAddress, $0.count) }
    }
}
