import Foundation
import LaunchBench
import ProcessRunner
import Testing
import TestSupport

/// `tools/gen-app --elf` lays the twin out twice. The one-directory layout must be what an
/// ELF project ships: every object in one directory, each object's DT_RUNPATH the single
/// entry `$ORIGIN`, and glibc's own loader (`ld.so --list`) resolving every DT_NEEDED name
/// inside that directory. Checked with binutils' `readelf` and glibc's `ld.so`, not with
/// the bench's own ELF reader.
@Suite(.bounded) struct ELFLayoutTests {
    static let loader = "/lib64/ld-linux-x86-64.so.2"

    @Test func oneDirectoryTwinHasOneRunpathEntryAndResolvesInside() async throws {
        let out = NSTemporaryDirectory() + "gen-app-elf-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: out) }
        let generated = try await ProcessRunner.run(
            BenchTests.repository + "/tools/gen-app", ["--dylibs", "10", "--seed", "1", "--elf", "--out", out], error: .captured)
        #expect(generated.succeeded, "\(generated.error)")

        let oneDir = out + "/one-dir"
        let files = try FileManager.default.contentsOfDirectory(atPath: oneDir).sorted()
        // 10 frameworks, libSystem and the executable.
        #expect(files.count == 12, "\(files)")
        var neededSeen = 0
        for file in files {
            let dynamic = try await readelfDynamic(oneDir + "/" + file)
            let runpaths = dynamic.filter { $0.tag == "RUNPATH" || $0.tag == "RPATH" }
            let needed = dynamic.filter { $0.tag == "NEEDED" }.map(\.value)
            neededSeen += needed.count
            if needed.isEmpty {
                #expect(runpaths.isEmpty, "\(file): \(runpaths)")
            } else {
                #expect(runpaths.map(\.value) == ["$ORIGIN"], "\(file): \(runpaths)")
                #expect(runpaths.first?.tag == "RUNPATH", "\(file): DT_RPATH instead of DT_RUNPATH")
            }
            for name in needed { #expect(files.contains(name), "\(file) needs \(name), not in \(oneDir)") }
        }
        #expect(neededSeen > files.count, "the executable alone needs every other object")

        // glibc itself finds every dependency of the executable in the one directory.
        let listed = try await ProcessRunner.run(ELFLayoutTests.loader, ["--list", oneDir + "/gen10"], error: .captured)
        #expect(listed.succeeded, "\(listed.error)")
        let resolved = listed.output.split(separator: "\n").filter { $0.contains("=>") }
        #expect(resolved.count == 11, "\(listed.output)")
        for line in resolved { #expect(line.contains("=> " + oneDir + "/"), "\(line)") }

        // The other layout really is the per-framework one: the executable searches many directories.
        let perFramework = try await readelfDynamic(out + "/gen10.app/gen10").filter { $0.tag == "RUNPATH" }
        #expect(perFramework.count == 1 && perFramework[0].value.split(separator: ":").count > 10, "\(perFramework)")
    }

    /// `readelf -d FILE`'s dynamic entries: (tag, bracketed value) for NEEDED, RUNPATH, RPATH.
    func readelfDynamic(_ file: String) async throws -> [(tag: String, value: String)] {
        let result = try await ProcessRunner.run("/usr/bin/readelf", ["-d", "-W", file], error: .captured)
        #expect(result.succeeded, "readelf \(file): \(result.error)")
        return result.output.split(separator: "\n").compactMap { line in
            guard let open = line.firstIndex(of: "("), let close = line.firstIndex(of: ")"), open < close,
                  let valueStart = line.firstIndex(of: "["), let valueEnd = line.lastIndex(of: "]") else { return nil }
            let tag = String(line[line.index(after: open)..<close])
            guard ["NEEDED", "RUNPATH", "RPATH"].contains(tag) else { return nil }
            return (tag, String(line[line.index(after: valueStart)..<valueEnd]))
        }
    }
}
