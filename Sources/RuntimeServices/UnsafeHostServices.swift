import CHostServices

/// The call into `CHostServices` that fills a buffer.
enum UnsafeHostServices {
    /// The host services table's words (the version, then the functions: hostservices.h).
    static func words() -> [UInt64] {
        var words = [UInt64](repeating: 0, count: Int(DYLD3_HOST_SERVICES_WORDS))
        unsafe words.withUnsafeMutableBufferPointer { buffer in
            unsafe dyld3_host_services_words(buffer.baseAddress!)
        }
        return words
    }
}
