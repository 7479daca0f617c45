import ClosureBuild
import Dyld2
import Foundation
import LoaderCore
import TestSupport
import Testing

/// Small files that claim millions of fixups by visiting the same locations again: page
/// starts that fall inside the page's earlier chains (new rule), and rebase opcodes that
/// repeat a run (the reader's per-stream budget). Both launch paths refuse them with one
/// line, after work bounded by the image.
@Suite(.bounded) struct RepeatedFixupsTests {
    static let pageSize = 0x4000
    static let pages = 4

    /// An arm64 executable whose 4 `__DATA` pages of 16 KB are each one chain with a
    /// 4-byte stride (every word says "next = 1", the page's last word ends it), and whose
    /// every page lists 4,094 starts, 0, 4, ..., 0x3FF4 (ascending, as dyld requires) or
    /// `repeated` (4,094 starts at 0): walked as written, 33.5 M rebases from 80 KB.
    static func repeatedStarts(ascending: Bool) -> MachOBuilder {
        var data = [UInt8](repeating: 0, count: pageSize * pages)
        for offset in stride(from: 0, to: data.count, by: 4) where (offset + 4) % pageSize != 0 {
            data[offset + 2] = 0x08  // 1 << 19: next = 1 in the high word, target 0x80000 in the low
        }
        let startCount = (pageSize - 12) / 4 + 1
        var starts = [UInt16](repeating: 0x8000 | UInt16(pages), count: pages)
        for index in 0..<startCount {
            let offset = ascending ? UInt16(4 * index) : 0
            starts.append(index == startCount - 1 ? offset | 0x8000 : offset)
        }
        var image = MachOBuilder(fileType: .execute)
        image.data = .init(bytes: data, fixups: .chained(
            pageSize: UInt16(pageSize), pageCount: UInt16(pages), pageStarts: starts, imports: []))
        return image
    }

    /// An arm64 executable with one 4 KB `__DATA` page and a rebase stream that repeats
    /// "rebase all 512 pointers of the page" 3,000 times: 1.5 M rebases from 15 KB of opcodes.
    static func repeatedRebaseRuns() -> MachOBuilder {
        var opcodes: [UInt8] = []
        for _ in 0..<3_000 { opcodes += [0x21, 0x00, 0x60, 0x80, 0x04] }  // SET_SEGMENT_AND_OFFSET 1+0; DO_REBASE_ULEB_TIMES 512
        opcodes.append(0x00)
        var image = MachOBuilder(fileType: .execute)
        image.data = .init(bytes: [UInt8](repeating: 0, count: 0x1000), fixups: .rebaseOpcodes(opcodes))
        return image
    }

    static func write(_ image: MachOBuilder, _ name: String) throws -> (path: String, directory: String, kept: Bool) {
        let kept = ProcessInfo.processInfo.environment["DYLD3_DEEP_GRAPH_OUT"]
        let directory = try kept ?? Scratch.directory("repeated")
        try image.write(to: directory + "/" + name)
        return (directory + "/" + name, directory, kept != nil)
    }

    /// Both launch paths' error for `path`, as printed.
    static func refusals(_ path: String) -> [String] {
        var messages: [String] = []
        do {
            _ = try ClosureBuilder.build(roots: [path], arch: "arm64", root: nil)
            messages.append("install: no error")
        } catch {
            messages.append("\(error)")
        }
        do {
            let launch = try SlowPath.launch(LaunchOptions(roots: [path], arch: "arm64", root: nil, run: false))
            launch.memory.release()
            messages.append("dyld2: no error")
        } catch {
            messages.append("\(error)")
        }
        return messages
    }

    @Test(arguments: [true, false])
    func pageStartsInsideAnEarlierChainAreRefused(ascending: Bool) async throws {
        let (path, directory, kept) = try Self.write(Self.repeatedStarts(ascending: ascending), ascending ? "ascending-starts" : "repeated-starts")
        defer { if !kept { Scratch.remove(directory) } }
        let (accepted, message) = try await Oracle.objdumpAccepts(["--macho", "--private-headers", path])
        #expect(accepted, "\(message)")
        // The second start of page 0 (0x4 or 0x0) lies inside the first chain, which ended at 0x3ff8.
        let second = ascending ? "0x4" : "0x0"
        for refusal in Self.refusals(path) {
            #expect(refusal.hasPrefix(path + ": offset 0x"), "\(refusal)")
            #expect(refusal.contains(
                "chain start \(second) of page 0 of segment __DATA is not past the end of the page's previous chain (0x3ff8): "
                    + "its locations would be fixed up again"), "\(refusal)")
            #expect(!refusal.contains("\n"))
        }
    }

    @Test func rebaseRunsBeyondWhatTheImageCanHoldAreRefused() async throws {
        let (path, directory, kept) = try Self.write(Self.repeatedRebaseRuns(), "repeated-rebase-runs")
        defer { if !kept { Scratch.remove(directory) } }
        let (accepted, message) = try await Oracle.objdumpAccepts(["--macho", "--private-headers", path])
        #expect(accepted, "\(message)")
        // The reader charges every run to a budget of one fixup per 4 bytes of the image.
        for refusal in Self.refusals(path) {
            #expect(refusal.hasPrefix(path + ": offset 0x"), "\(refusal)")
            #expect(refusal.contains("REBASE_OPCODE_DO_REBASE_ULEB_TIMES asks for 512 fixups, more than the image has room for"), "\(refusal)")
            #expect(!refusal.contains("\n"))
        }
    }
}
