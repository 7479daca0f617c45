import LaunchMemory

/// This process's memory as Linux reports it. (The system calls are in
/// ``UnsafeProcessMemory``.)
enum ProcessMemory {
    /// The host's page size.
    static let pageSize = Int(LaunchMemory.pageSize)

    /// Private_Dirty pages of the mappings that lie inside the launch's region.
    static func privateDirtyPages(_ memory: LaunchMemory) -> Int { smapsPages(memory, "Private_Dirty") }

    /// Pages the process made private in the mappings inside the launch's region: their
    /// `Anonymous` pages. A fixup written into a file-backed private mapping (an eager
    /// launch) makes a copy-on-write page, which is anonymous (and dirty); a page
    /// `UFFDIO_COPY` installed (page-in) is anonymous but never marked dirty, so
    /// `Private_Dirty` misses it. `Private_Dirty` also counts page-cache pages of a file
    /// written moments ago and not yet written back (a freshly generated app's `__TEXT`),
    /// which no launch made: `Anonymous` counts exactly the private copies.
    static func privatePages(_ memory: LaunchMemory) -> Int { smapsPages(memory, "Anonymous") }

    /// Sums smaps field `field` (kB) over the mappings inside the launch's region, in pages.
    private static func smapsPages(_ memory: LaunchMemory, _ field: Substring) -> Int {
        let (start, end) = (memory.regionBase, memory.regionBase &+ memory.regionSize)
        return smaps(pid: nil).filter { $0.low >= start && $0.high <= end }.reduce(0) { $0 + ($1.fields[field] ?? 0) } * 1024 / pageSize
    }

    /// Kilobytes by smaps field (`Rss`, `Pss`, `Shared_Clean`, `Private_Dirty`, ...) summed over
    /// process `pid`'s mappings of files whose path ends with `suffix`.
    static func smapsOfFile(pid: Int32, endingWith suffix: String) -> [String: Int] {
        smaps(pid: pid).filter { $0.header.hasSuffix(suffix) }.reduce(into: [:]) { totals, mapping in
            for (name, kilobytes) in mapping.fields { totals[String(name), default: 0] += kilobytes }
        }
    }

    /// Kilobytes by field of process `pid`'s `smaps_rollup` (the whole process).
    static func rollup(pid: Int32) -> [String: Int] {
        Dictionary(procLines("/proc/\(pid)/smaps_rollup").compactMap(field).map { (String($0.name), $0.kilobytes) }) { $1 }
    }

    /// The mappings of process `pid`'s smaps (nil: this process): each one's range, header line and fields in kB.
    private static func smaps(pid: Int32?) -> [(low: UInt64, high: UInt64, header: Substring, fields: [Substring: Int])] {
        var mappings: [(low: UInt64, high: UInt64, header: Substring, fields: [Substring: Int])] = []
        for line in procLines("/proc/\(pid.map(String.init) ?? "self")/smaps") {
            if let dash = line.firstIndex(of: "-"), let space = line.firstIndex(of: " "), dash < space,
               let low = UInt64(line[..<dash], radix: 16), let high = UInt64(line[line.index(after: dash)..<space], radix: 16) {
                mappings.append((low, high, line, [:]))
            } else if !mappings.isEmpty, let field = field(line) {
                mappings[mappings.count - 1].fields[field.name] = field.kilobytes
            }
        }
        return mappings
    }

    /// A `Name:   N kB` line's name and number.
    private static func field(_ line: Substring) -> (name: Substring, kilobytes: Int)? {
        guard let colon = line.firstIndex(of: ":"), let kilobytes = Int(line[line.index(after: colon)...].split(separator: " ").first ?? "") else { return nil }
        return (line[..<colon], kilobytes)
    }

    /// The lines of a /proc file, read to its end (its reported size is 0).
    static func procLines(_ path: String) -> [Substring] {
        String(decoding: UnsafeProcessMemory.contents(ofProcFile: path), as: UTF8.self).split(separator: "\n")
    }
}
