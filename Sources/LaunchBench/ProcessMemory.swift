/// This process's memory as Linux reports it. (The system calls are in
/// ``UnsafeProcessMemory``.)
enum ProcessMemory {
    /// The host's page size.
    static let pageSize = UnsafeProcessMemory.pageSize

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
        return kilobytes * 1024 / pageSize
    }

    /// The lines of a /proc file, read to its end (its reported size is 0).
    static func procLines(_ path: String) -> [Substring] {
        String(decoding: UnsafeProcessMemory.contents(ofProcFile: path), as: UTF8.self).split(separator: "\n")
    }

    /// This process's peak RSS in kB.
    static func maxRSSKilobytes() -> Int { UnsafeProcessMemory.maxRSSKilobytes() }
}
