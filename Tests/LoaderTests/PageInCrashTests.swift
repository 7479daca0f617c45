import Foundation
import ProcessRunner
import TestSupport
import Testing

/// "A crash is a crash" under page-in linking: a process whose pages are being filled ends
/// the way it would without page-in, by the same signal, and never hangs. Each launch runs
/// `dyld3` as a child, killed after `limit` seconds (status 137, failing the test) if it
/// has not ended: a hang fails the test instead of holding up the run.
@Suite(.serialized, .bounded) struct PageInCrashTests {
    /// Generous for a loaded 2-core machine: the crashing launches below end in well under a
    /// second here. The Swift runtime's crash handler stays on (it suspends every other
    /// thread, the case that once left a thread waiting on a page forever), without
    /// symbolication, which alone takes seconds.
    static let limit = 60
    static let crashHandler = ["SWIFT_BACKTRACE=enable=yes,symbolicate=off,threads=crashed,registers=none,images=none,interactive=no"]

    /// Fixtures/crash-threads built against the fixtures' libSystem and installed.
    struct CrashApp {
        let directory: URL
        var app: String { directory.appendingPathComponent("crash-threads.app").path }
        var cache: String { directory.appendingPathComponent("cache").path }
        let root: String
    }

    /// With `defines` (`-DNAME=VALUE`) on its compile line; `signed`: with an ad-hoc code
    /// signature, so a page-in launch hashes every page it fills against its code slot.
    static func buildCrashApp(defines: [String] = [], signed: Bool = false) async throws -> CrashApp {
        let root = Paths.repoRoot.appendingPathComponent("build/fixtures/x86_64-chained/root").path
        let libSystem = root + "/usr/lib/libSystem.B.dylib"
        try #require(FileManager.default.fileExists(atPath: libSystem), "run make fixtures")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("crash-threads-\(UUID().uuidString)")
        let bundle = directory.appendingPathComponent("crash-threads.app")
        try FileManager.default.createDirectory(at: bundle, withIntermediateDirectories: true)
        let object = directory.appendingPathComponent("main.o").path
        let source = Paths.repoRoot.appendingPathComponent("Fixtures/crash-threads/main.c").path
        let compile = try await ProcessRunner.run("/opt/swift/usr/bin/clang", [
            "-target", "x86_64-apple-macos11", "-ffreestanding", "-fno-stack-protector", "-fno-builtin", "-O1",
        ] + defines + ["-c", source, "-o", object], error: .mergedIntoOutput)
        try #require(compile.status == 0, "\(compile.output)")
        let link = try await ProcessRunner.run("/usr/lib/llvm-19/bin/ld64.lld", [
            "-arch", "x86_64", "-platform_version", "macos", "11.0", "11.0", "-fixup_chains",
        ] + (signed ? ["-adhoc_codesign"] : []) + [
            "-o", bundle.appendingPathComponent("crash-threads").path, object, libSystem,
        ], error: .mergedIntoOutput)
        try #require(link.status == 0, "\(link.output)")
        let app = CrashApp(directory: directory, root: root)
        let install = try await Dyld3Binary.run(["install", "--cache", app.cache, "--root", root, app.app], limitSeconds: limit)
        try #require(install.status == 0, "\(install.stderr)")
        return app
    }

    /// 16 threads, their stacks in the app's own __bss, read pointers from 64 pages of
    /// fixups in their own orders and have the kernel write into new zero-fill pages of the
    /// same segment, while main writes through a null pointer: eager and page-in alike end by
    /// SIGSEGV (status 139), with the crash handler's report of that null dereference, three
    /// times each: no thread, in user mode or inside a system call, waits on a page another
    /// thread was to fill.
    @Test func aCrashWhileThreadsFillPagesEndsTheProcessBySIGSEGV() async throws {
        let app = try await Self.buildCrashApp()
        defer { try? FileManager.default.removeItem(at: app.directory) }
        for fixups in ["eager", "page-in"] {
            for attempt in 1...3 {
                let result = try await Dyld3Binary.run(
                    ["launch", "--mode", "dyld3", "--fixups", fixups, "--cache", app.cache, "--root", app.root, app.app],
                    limitSeconds: Self.limit, environment: Self.crashHandler)
                #expect(result.status == 128 + SIGSEGV, "\(fixups) #\(attempt): status \(result.status)\(result.status == 137 ? " (killed at its time limit: it hung)" : ""): \(result.stderr.suffix(600))")
                #expect(result.stderr.contains("Bad pointer dereference at 0x0000000000000010"), "\(fixups) #\(attempt): \(result.stderr.suffix(600))")
                #expect(!result.stderr.contains("page-in:"), "\(fixups) #\(attempt): \(result.stderr.suffix(600))")
            }
        }
    }
}
