import Foundation
import TestSupport
import Testing

/// Inputs that are not Mach-O files at all: each command that takes a file answers with one
/// line `dyld3: PATH…: reason` and exit status 1, never a crash, a hang or usage text.
/// `launch --rebuild` with a cache it cannot write still prints the launch's result.
extension ClosureTests {
    static let fileCommands = ["inspect", "install", "launch", "compare"]

    @Test func nonMachOInputsGetOneLineAndExitOne() async throws {
        let scratch = try Scratch.directory("edges")
        defer { Scratch.remove(scratch) }
        let emptyUniversal = scratch + "/empty-universal"
        try Scratch.write([0xca, 0xfe, 0xba, 0xbe, 0, 0, 0, 0], to: emptyUniversal)
        let fifo = scratch + "/fifo"
        #expect(mkfifo(fifo, 0o644) == 0)
        let directory = scratch + "/directory"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let cache = scratch + "/cache"
        for path in [emptyUniversal, fifo, directory, "/dev/zero"] {
            for command in Self.fileCommands {
                let arguments = [command, path] + (command == "inspect" ? [] : ["--cache", cache])
                let result = try await Dyld3Binary.run(arguments)
                let lines = result.stderr.split(separator: "\n")
                #expect(result.status == 1, "\(arguments): \(result.status) \(result.stderr)")
                #expect(lines.count == 1 && lines[0].hasPrefix("dyld3: ") && lines[0].contains(path + ": "), "\(arguments): \(result.stderr)")
                #expect(!result.stderr.contains("Usage") && result.stdout.isEmpty, "\(arguments): \(result.stderr)")
            }
        }
    }

    /// As root, permissions do not stop writes, so the cache is made unwritable by being a
    /// regular file: no directory can be created at its path.
    @Test func rebuildIntoAnUnwritableCacheStillPrintsTheResult() async throws {
        let app = try #require(Self.launchable.first { $0.name == "paths" && $0.variant == "x86_64-opcodes" })
        guard case let .result(expected, _) = app.expectation else { return }
        let scratch = try Scratch.directory("rebuild")
        defer { Scratch.remove(scratch) }
        let cache = scratch + "/cache-is-a-file"
        try Scratch.write(Array("not a directory\n".utf8), to: cache)
        let result = try await Dyld3Binary.run(["launch", app.bundle, "--root", app.root, "--cache", cache, "--rebuild"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.lines.contains("main returned \(expected)"), "\(result.stdout)")
        #expect(result.stderr.contains("warning: --rebuild: no closure written"), "\(result.stderr)")
        #expect(try String(contentsOfFile: cache, encoding: .utf8) == "not a directory\n")
    }
}

extension ClosureTests {
    /// LLVM lets the last load command run past `sizeofcmds` (its header inside, its body
    /// inside the file); dyld does not. `inspect` agrees with llvm-objdump-19 and shows the
    /// file; `install` and both launch paths refuse it with one line.
    @Test func lastCommandPastSizeofcmdsIsReadableButNotLoadable() async throws {
        let app = try #require(Self.launchable.first { $0.name == "paths" && $0.variant == "x86_64-opcodes" })
        let scratch = try Scratch.directory("sizeofcmds")
        defer { Scratch.remove(scratch) }
        let bundle = scratch + "/paths.app"
        try FileManager.default.copyItem(atPath: app.bundle, toPath: bundle)
        let executable = bundle + "/paths"
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: executable)))
        let sizeofcmds = UInt32(bytes[20]) | UInt32(bytes[21]) << 8 | UInt32(bytes[22]) << 16 | UInt32(bytes[23]) << 24
        let shortened = sizeofcmds - 8
        for index in 0..<4 { bytes[20 + index] = UInt8(truncatingIfNeeded: shortened >> (8 * UInt32(index))) }
        try Scratch.write(bytes, to: executable)

        let objdump = try await Oracle.objdumpAccepts(["--private-headers", executable])
        #expect(objdump.accepted, "\(objdump.message)")
        let inspect = try await Dyld3Binary.run(["inspect", executable])
        #expect(inspect.status == 0, "\(inspect.stderr)")
        for arguments in [["install", "--cache", scratch + "/cache"], ["launch", "--mode", "dyld2"], ["launch", "--mode", "dyld3", "--cache", scratch + "/cache"]] {
            let result = try await Dyld3Binary.run([arguments[0], bundle, "--root", app.root] + arguments.dropFirst())
            #expect(result.status != 0 && !result.stdout.contains("main returned"), "\(arguments): \(result.stdout)")
            #expect(result.stderr.contains("load commands run \(sizeofcmds) bytes, past sizeofcmds (\(shortened))"), "\(arguments): \(result.stderr)")
        }
    }
}
