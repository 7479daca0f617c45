import Foundation
import LaunchPlan
import ProcessRunner
import LoaderCore

/// The programs a stub root is built with, and the macOS version it targets.
package struct StubToolchain: Sendable {
    /// Assembles the generated source (`-target ARCH-apple-macosV -c`, or the plan's
    /// platform: ``StubPlatform``).
    package var clang: String
    /// `ld64.lld`: links each slice.
    package var linker: String
    /// `llvm-lipo`: joins the slices of a stub needed for several architectures.
    package var lipo: String
    /// The macOS deployment target (iOS stubs target iOS 14.0).
    package var minimumOS: String

    package init(
        clang: String = "/opt/swift/usr/bin/clang",
        linker: String = "/usr/lib/llvm-19/bin/ld64.lld",
        lipo: String = "/usr/lib/llvm-19/bin/llvm-lipo",
        minimumOS: String = "11.0"
    ) {
        (self.clang, self.linker, self.lipo, self.minimumOS) = (clang, linker, lipo, minimumOS)
    }
}

extension StubRootPlan {
    /// Builds every stub and the host and writes them into the root, each file replaced
    /// whole. The same plan always writes the same bytes: the sources are generated in a
    /// fixed order and the tools are deterministic (the linker's UUID and ad-hoc signature
    /// depend only on the content and the output's file name, which is the final one).
    package func write(toolchain: StubToolchain = StubToolchain()) async throws(CommandFailure) {
        let scratch = FileManager.default.temporaryDirectory.path + "/dyld3-stub-root-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        var builder = StubBuilder(toolchain: toolchain, platform: platform, scratch: scratch)
        // The runtime first: stubs that link it are linked against its slices.
        var runtimeSlices: [String: String] = [:]
        let isRuntime = { (stub: StubDylib) in stub.installName == StubObjC.runtimeInstallName }
        for stub in stubs.filter(isRuntime) + stubs.filter({ !isRuntime($0) }) {
            let isRuntime = isRuntime(stub)
            let built = try await builder.build(stub.slices, to: stub.path, executable: false, isRuntime: isRuntime) { (slice) throws(CommandFailure) in
                var arguments = ["-dylib", "-install_name", stub.installName,
                                 "-current_version", stub.currentVersion.versionString,
                                 "-compatibility_version", stub.compatibilityVersion.versionString]
                if slice.linksRuntime {
                    guard let runtime = runtimeSlices[slice.arch] else {
                        throw .io(path: stub.path, reason: "links \(StubObjC.runtimeInstallName), which the plan has no \(slice.arch) stub of")
                    }
                    arguments.append(runtime)
                }
                return arguments
            }
            if isRuntime { runtimeSlices = built }
        }
        try await builder.build(host.slices, to: host.path, executable: true) { _ in
            ["-e", StubAssembly.hostEntry] + host.rpaths.flatMap { ["-rpath", $0] }
        }
        try removeOtherStubHosts()
    }
}

/// Runs the toolchain for one stub root, in a scratch directory.
private struct StubBuilder {
    let toolchain: StubToolchain
    let platform: StubPlatform
    let scratch: String
    /// Stubs built so far: each gets its own scratch directory.
    var built = 0

    /// Assembles and links each slice, joins them with lipo when there are several, and
    /// installs the result at `path`. Returns each slice's linked file (in the scratch
    /// directory), by architecture.
    @discardableResult
    mutating func build(
        _ slices: [StubSlice], to path: String, executable: Bool, isRuntime: Bool = false,
        linkArguments: (StubSlice) throws(CommandFailure) -> [String]
    ) async throws(CommandFailure) -> [String: String] {
        built += 1
        let leaf = (path as NSString).lastPathComponent
        let directory = "\(scratch)/\(built)"
        var outputs: [String] = []
        for slice in slices {
            let sliceDirectory = "\(directory)/\(slice.arch)"
            try makeDirectory(sliceDirectory)
            let source = "\(sliceDirectory)/\(leaf).s", object = "\(sliceDirectory)/\(leaf).o"
            let output = "\(sliceDirectory)/\(leaf)"
            try write(Data(try StubAssembly.source(for: slice, withHostEntry: executable, isRuntime: isRuntime).utf8), to: source)
            let minimumOS = platform.minimumOS(toolchain)
            try await run(toolchain.clang, ["-target", platform.clangTarget(arch: slice.arch, minimumOS: minimumOS), "-c", source, "-o", object])
            try await run(toolchain.linker,
                    ["-arch", slice.arch, "-platform_version", platform.rawValue, minimumOS, minimumOS]
                        + (try linkArguments(slice)) + [object, "-o", output])
            outputs.append(output)
        }
        guard var result = outputs.first else { return [:] }
        if outputs.count > 1 {
            result = "\(directory)/\(leaf)"
            try await run(toolchain.lipo, ["-create"] + outputs + ["-output", result])
        }
        try install(result, at: path, executable: executable)
        return Dictionary(uniqueKeysWithValues: zip(slices.map(\.arch), outputs))
    }

    private func install(_ built: String, at path: String, executable: Bool) throws(CommandFailure) {
        guard let data = FileManager.default.contents(atPath: built) else { throw .io(path: built, reason: "the built file cannot be read") }
        try makeDirectory((path as NSString).deletingLastPathComponent)
        try write(data, to: path)
        try fileOperation(path) { try FileManager.default.setAttributes([.posixPermissions: executable ? 0o755 : 0o644], ofItemAtPath: path) }
    }

    private func makeDirectory(_ path: String) throws(CommandFailure) {
        try fileOperation(path) { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
    }

    /// Writes `data` to a temporary file next to `path` and renames it over `path`.
    private func write(_ data: Data, to path: String) throws(CommandFailure) {
        try fileOperation(path) { try data.write(to: URL(fileURLWithPath: path), options: .atomic) }
    }

    /// Runs `body`, a Foundation operation on `path`, whose error becomes an I/O failure.
    private func fileOperation(_ path: String, _ body: () throws -> Void) throws(CommandFailure) {
        do { try body() } catch { throw .io(path: path, reason: error.localizedDescription) }
    }

    /// Runs one tool of the toolchain; its stdout and stderr together are the error text.
    private func run(_ tool: String, _ arguments: [String]) async throws(CommandFailure) {
        let command = ([tool] + arguments).joined(separator: " ")
        let result: ProcessRunner.Result
        do { result = try await ProcessRunner.run(tool, arguments, error: .mergedIntoOutput) } catch { throw .toolFailed(command: command, output: error.description) }
        guard result.succeeded else { throw .toolFailed(command: command, output: result.output) }
    }
}

extension StubRootPlan {
    /// A root has one host: stub hosts a former plan left at the other host locations
    /// (`LaunchRoots.hostCandidates`) are removed, so that a launch finds this plan's host.
    /// A real executable there is left alone.
    func removeOtherStubHosts() throws(CommandFailure) {
        var files = StubRootFiles()
        for path in LaunchRoots.hostCandidates(root: root) where path != host.path && FileManager.default.fileExists(atPath: path) {
            guard try !files.isRealImage(path) else { continue }
            do {
                try FileManager.default.removeItem(atPath: path)
            } catch {
                throw .io(path: path, reason: "cannot remove a former stub host: \(error.localizedDescription)")
            }
        }
    }
}
