/// The measurement every bench of launch paths makes: `runs` rounds, each launching every
/// path once in turn (round 0 warms caches and is discarded), warm, then cold when an eviction
/// method is given (each path's `files` emptied from the page cache before each sample).
struct InterleavedRounds {
    let runs: Int
    let paths: [String]
    /// Per path, the files a cold sample empties from the page cache first.
    let files: [String: [String]]
    let eviction: EvictionMethod?

    /// The warm samples, then the cold ones (nil without an eviction method), per path;
    /// `launch(path, cold, kept)` makes one sample and returns its nanoseconds (`kept` is
    /// false in the discarded round).
    func measure(log: (String) -> Void, _ launch: (_ path: String, _ cold: Bool, _ kept: Bool) async throws -> Int64) async throws
        -> (warm: [String: Distribution], cold: [String: Distribution]?) {
        func rounds(cold: Bool) async throws -> [String: Distribution] {
            var samples: [String: [Int64]] = [:]
            for round in 0...runs {
                for path in paths {
                    if cold, let eviction { try PageCache.evict(files[path] ?? [], method: eviction) }
                    let time = try await launch(path, cold, round > 0)
                    if round > 0 { samples[path, default: []].append(time) }
                }
            }
            return samples.mapValues(Distribution.init)
        }
        log("  warm: \(runs) rounds of \(paths.joined(separator: ", "))")
        let warm = try await rounds(cold: false)
        guard let eviction else { return (warm, nil) }
        log("  cold: \(runs) rounds, each sample after \(eviction.rawValue)")
        return (warm, try await rounds(cold: true))
    }

    /// With a `tool` (the `dyld3` executable) to run: `runs` rounds of `paths`, each sample a
    /// fresh process that `sample(tool, path)` starts, returning what it measured (its time,
    /// its peak RSS); per path, the distribution of each. None without a tool; `log` first
    /// gets `  fresh: RUNS rounds` and `note`.
    static func fresh(tool: String?, runs: Int, paths: [String], log: (String) -> Void, _ note: String,
                      _ sample: (_ tool: String, _ path: String) async throws -> [Int64]) async throws -> [String: [Distribution]] {
        guard let tool else { return [:] }
        log("  fresh: \(runs) rounds" + note)
        var samples: [String: [[Int64]]] = [:]
        for _ in 0..<runs {
            for path in paths { samples[path, default: []].append(try await sample(tool, path)) }
        }
        return samples.mapValues { rows in rows[0].indices.map { value in Distribution(rows.map { $0[value] }) } }
    }
}
