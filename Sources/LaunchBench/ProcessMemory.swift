import Foundation
#if canImport(Glibc)
import Glibc
#endif

let sysconfPageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

/// This process's memory as Linux reports it.
enum ProcessMemory {
    /// Private_Dirty pages of the mappings that lie inside `[start, start + size)`.
    static func privateDirtyPages(start: UInt64, size: UInt64) -> Int {
        var inside = false
        var kilobytes = 0
        for line in procLines("/proc/self/smaps") {
            if let dash = line.firstIndex(of: "-"), let space = line.firstIndex(of: " "), dash < space,
               let low = UInt64(line[..<dash], radix: 16), let high = UInt64(line[line.index(after: dash)..<space], radix: 16) {
                inside = low >= start && high <= start &+ size
            } else if inside, line.hasPrefix("Private_Dirty:") {
                kilobytes += Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
            }
        }
        return kilobytes * 1024 / sysconfPageSize
    }

    /// The lines of a /proc file, read to its end (its reported size is 0).
    static func procLines(_ path: String) -> [Substring] {
        guard let file = fopen(path, "r") else { return [] }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
            if count == 0 { break }
            bytes += chunk[..<count]
        }
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n")
    }

    /// This process's peak RSS in kB.
    static func maxRSSKilobytes() -> Int {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        return usage.ru_maxrss
    }
}
