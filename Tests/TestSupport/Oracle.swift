import Foundation
import MachOInspect
import MachOReader
import ProcessRunner

/// Where tests find the repository, the shared corpus and the built fixtures.
package enum Paths {
    /// The repository root (this file is Tests/TestSupport/Oracle.swift).
    package static let repoRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The shared corpus: `../shared/corpus` beside the repository (read-only, provided by the
    /// machine), or `$DYLD3_CORPUS`.
    package static let corpus: URL = {
        if let override = ProcessInfo.processInfo.environment["DYLD3_CORPUS"] {
            return URL(fileURLWithPath: override)
        }
        return repoRoot.deletingLastPathComponent().appendingPathComponent("shared/corpus")
    }()

    /// The real Apple-built files the repository carries itself (`Fixtures/corpus`, origins in
    /// its README): iOS, iOS-simulator and Objective-C modules the shared corpus lacks.
    package static let bundledCorpus = repoRoot.appendingPathComponent("Fixtures/corpus")

    /// Reader fixtures built by `tools/build-reader-fixtures` (run by `make test`).
    package static let readerFixtures = repoRoot.appendingPathComponent("build/reader-fixtures")

    /// The oracle: LLVM 19's objdump, installed by tools/bootstrap.
    package static let objdump = "/usr/lib/llvm-19/bin/llvm-objdump"
}

/// Runs llvm-objdump-19, the independent oracle the reader is checked against.
package enum Oracle {
    package struct Failure: Error, CustomStringConvertible {
        package let description: String
        package init(description: String) { self.description = description }
    }

    /// `llvm-objdump --macho ARGS`; stdout on success, a thrown failure otherwise.
    package static func objdump(_ arguments: [String]) async throws -> String {
        guard FileManager.default.isExecutableFile(atPath: Paths.objdump) else {
            throw Failure(description: "\(Paths.objdump) is missing: run tools/bootstrap")
        }
        let result = try await ProcessRunner.run(Paths.objdump, ["--macho"] + arguments, error: .captured)
        guard result.succeeded else {
            throw Failure(description: "llvm-objdump \(arguments) failed: \(result.error)")
        }
        return result.output
    }

    /// Whether `llvm-objdump --macho ARGS` opens the file: it exits 0 and does not say
    /// the file "is not an object file" (which it reports with exit status 0); with its
    /// message either way.
    package static func objdumpAccepts(_ arguments: [String]) async throws -> (accepted: Bool, message: String) {
        guard FileManager.default.isExecutableFile(atPath: Paths.objdump) else {
            throw Failure(description: "\(Paths.objdump) is missing: run tools/bootstrap")
        }
        let result = try await ProcessRunner.run(Paths.objdump, ["--macho"] + arguments, error: .captured)
        if !result.succeeded {
            return (false, result.error.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        if let line = result.output.split(separator: "\n").first(where: { $0.hasSuffix(": is not an object file") }) {
            return (false, String(line))
        }
        return (true, "")
    }

    /// Lines with runs of blanks collapsed and ends trimmed: the only differences allowed.
    package static func normalized(_ text: String) -> [String] {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            line.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ")
        }
    }
}

/// The Mach-O files of the shared corpus.
package enum Corpus {
    /// Paths of every Mach-O file (thin or universal) under the shared corpus and the
    /// repository's own, sorted within each.
    package static func machOFiles() throws -> [String] {
        try machOFiles(under: Paths.corpus) + machOFiles(under: Paths.bundledCorpus)
    }

    package static func machOFiles(under root: URL) throws -> [String] {
        guard let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey]) else {
            throw Oracle.Failure(description: "cannot list \(root.path)")
        }
        var files: [String] = []
        for case let url as URL in walker {
            guard (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true,
                  let handle = try? FileHandle(forReadingFrom: url) else { continue }
            let magic = handle.readData(ofLength: 4)
            try? handle.close()
            if [[0xcf, 0xfa, 0xed, 0xfe], [0xca, 0xfe, 0xba, 0xbe]].contains(Array(magic)) {
                files.append(url.path)
            }
        }
        guard !files.isEmpty else { throw Oracle.Failure(description: "no Mach-O files under \(root.path)") }
        return files.sorted()
    }

    package static func bytes(_ path: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// The architecture names of a file's slices.
    package static func architectures(_ path: String) throws -> [String] {
        try UniversalFile(parsing: bytes(path)).slices.map(\.cpu.name)
    }
}

/// Compares `dyld3 inspect`'s text with llvm-objdump's for one file, flag and arch choice.
/// Returns a description of the first difference, or nil when they agree.
package func inspectDifference(path: String, table: InspectTable, arch: String?) async throws -> String? {
    var arguments = [table.objdumpFlag ?? table.flag]
    if let arch { arguments.append("--arch=\(arch)") }
    arguments.append(path)
    let expected = Oracle.normalized(try await Oracle.objdump(arguments))
    let actual = Oracle.normalized(
        try ObjdumpReport.render(path: path, bytes: try Corpus.bytes(path), tables: [table], arch: ArchSelection(arch)))
    for index in 0..<max(expected.count, actual.count) {
        let want = index < expected.count ? expected[index] : "<end>"
        let got = index < actual.count ? actual[index] : "<end>"
        if want != got {
            return "\(path) \(arguments.dropLast().joined(separator: " ")) line \(index + 1):\n  llvm-objdump: \(want)\n  inspect:      \(got)"
        }
    }
    return nil
}
