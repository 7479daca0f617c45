import CHostServices
import CThreadLocal

/// The calls into `CThreadLocal` (the TLV thunk and its keys) and `CHostServices`.
enum UnsafeThreadLocal {
    /// The address every set-up descriptor's thunk holds.
    static var thunk: UInt64 { dyld3_tlv_thunk() }

    /// The host services table's words (the version, then the functions: hostservices.h).
    static func hostServicesWords() -> [UInt64] {
        var words = [UInt64](repeating: 0, count: Int(DYLD3_HOST_SERVICES_WORDS))
        unsafe words.withUnsafeMutableBufferPointer { buffer in
            unsafe dyld3_host_services_words(buffer.baseAddress!)
        }
        return words
    }

    /// A key for a template of `initialSize` bytes at `address`, zeros up to `totalSize`; -1 when none is free.
    static func createKey(template address: UInt64, initialSize: UInt64, totalSize: UInt64) -> Int64 {
        dyld3_tlv_key_create(address, initialSize, totalSize)
    }

    static func releaseKey(_ key: Int64) {
        dyld3_tlv_key_release(key)
    }
}
