/// This process's memory as Linux reports it. (The system calls are in
/// ``UnsafeProcessMemory``.)
enum ProcessMemory {
    /// The host's page size.
    static let pageSize = UnsafeProcessMemory.pageSize

    /// Private_Dirty pages of the mappings that lie inside `[start, start + size)`.
    static func privateDirtyPages(start: UInt64, size: UInt64) -> Int {
        smapsPages(start: start, size: size) { $0["Private_Dirty"] ?? 0 }
    }

    /// Pages the process made private in the mappings inside `[start, start + size)`: their
    /// `Anonymous` pages. A fixup written into a file-backed private mapping (an eager
    /// launch) makes a copy-on-write page, which is anonymous (and dirty); a page
    /// `UFFDIO_COPY` installed (page-in) is anonymous but never marked dirty, so
    /// `Private_Dirty` misses it. `Private_Dirty` also counts page-cache pages of a file
    /// written moments ago and not yet written back (a freshly generated app's `__TEXT`),
    /// which no launch made: `Anonymous` counts exactly the private copies.
    static func privatePages(start: UInt64, size: UInt64) -> Int {
        smapsPages(start: start, size: size) { $0["Anonymous"] ?? 0 }
    }

    /// Sums `count(fields)` (kB, by smaps field name) over the mappings inside the range, in pages.
    private static func smapsPages(start: UInt64, size: UInt64, _ count: ([Substring: Int]) -> Int) -> Int {
        var kilobytes = 0
        var fields: [Substring: Int]?
        for line in procLines("/proc/self/smaps") {
            if let dash = line.firstIndex(of: "-"), let space = line.firstIndex(of: " "), dash < space,
               let low = UInt64(line[..<dash], radix: 16), let high = UInt64(line[line.index(after: dash)..<space], radix: 16) {
                if let previous = fields { kilobytes += count(previous) }
                fields = low >= start && high <= start &+ size ? [:] : nil
            } else if fields != nil, let colon = line.firstIndex(of: ":") {
                fields?[line[..<colon]] = Int(line[line.index(after: colon)...].split(separator: " ").first ?? "0")
            }
        }
        if let previous = fields { kilobytes += count(previous) }
        return kilobytes * 1024 / pageSize
    }

    /// Kilobytes by smaps field (`Rss`, `Pss`, `Shared_Clean`, `Private_Dirty`, ...) summed over
    /// process `pid`'s mappings of files whose path ends with `suffix`.
    static func smapsOfFile(pid: Int32, endingWith suffix: String) -> [String: Int] {
        var totals: [String: Int] = [:]
        var counting = false
        for line in procLines("/proc/\(pid)/smaps") {
            if let dash = line.firstIndex(of: "-"), let space = line.firstIndex(of: " "), dash < space,
               UInt64(line[..<dash], radix: 16) != nil {
                counting = line.hasSuffix(suffix)
            } else if counting, let colon = line.firstIndex(of: ":"),
                      let kilobytes = Int(line[line.index(after: colon)...].split(separator: " ").first ?? "") {
                totals[String(line[..<colon]), default: 0] += kilobytes
            }
        }
        return totals
    }

    /// Kilobytes by field of process `pid`'s `smaps_rollup` (the whole process).
    static func rollup(pid: Int32) -> [String: Int] {
        var totals: [String: Int] = [:]
        for line in procLines("/proc/\(pid)/smaps_rollup") {
            guard let colon = line.firstIndex(of: ":"), let kilobytes = Int(line[line.index(after: colon)...].split(separator: " ").first ?? "") else { continue }
            totals[String(line[..<colon])] = kilobytes
        }
        return totals
    }

    /// The lines of a /proc file, read to its end (its reported size is 0).
    static func procLines(_ path: String) -> [Substring] {
        String(decoding: UnsafeProcessMemory.contents(ofProcFile: path), as: UTF8.self).split(separator: "\n")
    }

    /// This process's peak RSS in kB.
    static func maxRSSKilobytes() -> Int { UnsafeProcessMemory.maxRSSKilobytes() }
}
