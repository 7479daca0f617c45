#if canImport(Glibc)
import Glibc
#endif

/// The bench's only system calls about its own process: reading a /proc file, the peak
/// RSS, and glibc's heap policy. ``ProcessMemory`` is the safe side.
enum UnsafeProcessMemory {
    /// Makes glibc keep the heap memory this process frees instead of giving it back to the
    /// kernel (`mallopt`: `M_MMAP_THRESHOLD` 32 MiB, `M_TRIM_THRESHOLD` 256 MiB, which also
    /// turns off their dynamic adjustment); false if glibc refused either.
    static func keepFreedHeapMemory() -> Bool {
        let mmapThreshold: Int32 = -3, trimThreshold: Int32 = -1  // M_MMAP_THRESHOLD, M_TRIM_THRESHOLD (malloc.h)
        return glibcMallopt(mmapThreshold, 32 << 20) == 1 && glibcMallopt(trimThreshold, 256 << 20) == 1
    }

    /// The bytes of a /proc file, read to its end (its reported size is 0); [] if it
    /// cannot be opened.
    static func contents(ofProcFile path: String) -> [UInt8] {
        guard let file = unsafe fopen(path, "r") else { return [] }
        defer { unsafe fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = unsafe chunk.withUnsafeMutableBytes { unsafe fread($0.baseAddress, 1, $0.count, file) }
            if count == 0 { break }
            bytes += chunk[..<count]
        }
        return bytes
    }

    /// This process's peak RSS in kB (getrusage).
    static func maxRSSKilobytes() -> Int {
        var usage = rusage()
        unsafe getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        return usage.ru_maxrss
    }
}

/// glibc's `mallopt` (malloc.h is not in the Glibc module).
@_silgen_name("mallopt")
private func glibcMallopt(_ parameter: Int32, _ value: Int32) -> Int32
