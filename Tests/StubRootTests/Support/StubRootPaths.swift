import Foundation
import ProcessRunner
import TestSupport

/// Where the stub-root tests find the repository, the corpus and the tools.
enum StubRootPaths {
    static let repoRoot = Paths.repoRoot
    static let corpus = Paths.corpus.path
    static let objdump = Paths.objdump

    static func corpusFile(_ relativePath: String) -> String { corpus + "/" + relativePath }

    /// A file of the repository's own corpus (`Fixtures/corpus`).
    static func bundledFile(_ relativePath: String) -> String { Paths.bundledCorpus.path + "/" + relativePath }

    /// Every regular file under `directory`, as paths relative to it, sorted.
    static func files(under directory: String) throws -> [String] {
        guard let enumerator = FileManager.default.enumerator(atPath: directory) else { return [] }
        var files: [String] = []
        while let relative = enumerator.nextObject() as? String {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: directory + "/" + relative, isDirectory: &isDirectory), !isDirectory.boolValue {
                files.append(relative)
            }
        }
        return files.sorted()
    }
}

/// Runs a program and returns what it printed (stdout and stderr together).
enum Command {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func run(_ tool: String, _ arguments: [String]) async throws -> String {
        let result = try await ProcessRunner.run(tool, arguments, error: .mergedIntoOutput)
        guard result.succeeded else {
            throw Failure(description: "\(tool) \(arguments.joined(separator: " ")) failed:\n\(result.output)")
        }
        return result.output
    }

    /// `llvm-objdump-19 --macho ARGS`, the oracle.
    static func objdump(_ arguments: [String]) async throws -> String {
        try await run(StubRootPaths.objdump, ["--macho"] + arguments)
    }
}
