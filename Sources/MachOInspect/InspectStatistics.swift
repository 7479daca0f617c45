import MachOReader

/// `dyld3 inspect --stats`: decodes every fixup and export of each slice and reports the
/// counts and how long each decoder took (the best of a few runs, to damp noise).
package enum InspectStatistics {
    /// Runs per decoder; the fastest is reported.
    static let runs = 5

    package static func render(path: String, file bytes: ByteView, arch: ArchSelection) throws(MachOError) -> String {
        var out = ""
        try ObjdumpReport.forEachSlice(path: path, file: bytes, arch == .host ? .all : arch) { (file, slice, parsed, _) throws(MachOError) in
            out += "\(path) [\(slice.cpu.name)]\n"
            var image = parsed
            out += line("load commands", try best { (body) throws(MachOError) in
                image = try file.image(slice)
                for command in image.loadCommands { try body(command) }
            })
            out += line("rebases (opcodes)", try best { (body) throws(MachOError) in try image.forEachRebaseFixup(body) })
            for stream in BindStreamKind.allCases {
                let binds = try best { (body) throws(MachOError) in try image.forEachBindFixup(in: stream, body) }
                out += line("\(stream.rawValue) binds (opcodes)", binds)
            }
            out += line("chained fixups", try best { (body) throws(MachOError) in try image.forEachChainedFixup(body) })
            out += line("exports", try best { (body) throws(MachOError) in try image.exportTrie()?.forEachSymbol(body) })
        }
        return out
    }

    /// How many items `walk` hands its body, and its fastest time over ``runs`` runs.
    static func best<Item>(
        _ walk: ((Item) throws(MachOError) -> Void) throws(MachOError) -> Void
    ) throws(MachOError) -> (count: Int, time: Duration) {
        let clock = ContinuousClock()
        var fastest = Duration.seconds(1_000_000)
        var count = 0
        for _ in 0..<runs {
            count = 0
            let start = clock.now
            try walk { _ in count += 1 }
            fastest = min(fastest, clock.now - start)
        }
        return (count, fastest)
    }

    static func line(_ what: String, _ result: (count: Int, time: Duration)) -> String {
        let nanoseconds = result.time.components.seconds * 1_000_000_000 + result.time.components.attoseconds / 1_000_000_000
        let perItem = result.count > 0 ? " (\(nanoseconds / Int64(result.count)) ns each)" : ""
        return "  \(Text.pad(what, 24)) \(Text.pad(String(result.count), 8)) \(microseconds(nanoseconds)) µs\(perItem)\n"
    }

    static func microseconds(_ nanoseconds: Int64) -> String {
        let hundredths = nanoseconds % 1000 / 10
        return "\(nanoseconds / 1000).\(hundredths < 10 ? "0" : "")\(hundredths)"
    }
}
