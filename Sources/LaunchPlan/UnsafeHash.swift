import CXXHash
import MachOReader

/// xxh3-64 through libxxhash: the only place the loader hands it raw bytes.
package enum UnsafeHash {
    package static func xxh3(_ bytes: [UInt8]) -> UInt64 {
        unsafe bytes.withUnsafeBytes { unsafe XXH3_64bits($0.baseAddress, $0.count) }
    }

    package static func xxh3(_ bytes: ArraySlice<UInt8>) -> UInt64 {
        unsafe bytes.withUnsafeBytes { unsafe XXH3_64bits($0.baseAddress, $0.count) }
    }

    /// The hash of a window's bytes in place (a mapped file is not copied).
    package static func xxh3(_ view: ByteView) -> UInt64 {
        unsafe view.withUnsafeBytes { unsafe XXH3_64bits($0.baseAddress, $0.count) }
    }
}
