import AppArchive
import Foundation
import MachOReader
import ProcessRunner
import StubRoot
import Testing
import TestSupport

/// App bundles and `.ipa` archives: the zip reader against Info-ZIP's `zip`, its refusals
/// of unsafe archives, and the CLI on an iOS app built here (an executable that links its
/// own framework by `@rpath`, with a binary Info.plist naming it).
@Suite(.serialized, .bounded)
struct AppArchiveTests {
    static func run(_ tool: String, _ arguments: [String]) async throws -> String {
        let result = try await ProcessRunner.run(tool, arguments, error: .mergedIntoOutput)
        guard result.succeeded else { throw Failure(description: "\(tool) \(arguments.joined(separator: " ")): \(result.output)") }
        return result.output
    }

    struct Failure: Error, CustomStringConvertible { let description: String }

    /// `DIR/Payload/Demo.app`: `DemoMain` (iOS arm64 executable, `LC_RPATH
    /// @executable_path/Frameworks`, binding a datum of `@rpath/Demo.framework/Demo` and one of
    /// `/usr/lib/libSystem.B.dylib`), `Frameworks/Demo.framework/Demo`, and a binary
    /// Info.plist whose CFBundleExecutable is `DemoMain`. The libSystem it was linked
    /// against is not shipped (a stub root provides it).
    static func makeApp(in directory: String) async throws -> String {
        let toolchain = StubToolchain()
        let app = directory + "/Payload/Demo.app", build = directory + "/build"
        try FileManager.default.createDirectory(atPath: app + "/Frameworks/Demo.framework", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: build, withIntermediateDirectories: true)
        func assemble(_ name: String, _ source: String) async throws -> String {
            try source.write(toFile: "\(build)/\(name).s", atomically: true, encoding: .utf8)
            _ = try await run(toolchain.clang, ["-target", "arm64-apple-ios14.0", "-c", "\(build)/\(name).s", "-o", "\(build)/\(name).o"])
            return "\(build)/\(name).o"
        }
        let platform = ["-arch", "arm64", "-platform_version", "ios", "14.0", "14.0"]
        let framework = app + "/Frameworks/Demo.framework/Demo"
        _ = try await run(toolchain.linker, platform + [
            "-dylib", "-install_name", "@rpath/Demo.framework/Demo",
            try await assemble("demo", "\t.data\n\t.globl _demo_data\n_demo_data:\n\t.quad 7\n"), "-o", framework])
        _ = try await run(toolchain.linker, platform + [
            "-dylib", "-install_name", "/usr/lib/libSystem.B.dylib",
            try await assemble("system", "\t.data\n\t.globl _system_data\n_system_data:\n\t.quad 0\n"), "-o", "\(build)/libSystem.B.dylib"])
        _ = try await run(toolchain.linker, platform + [
            "-e", "_start", "-rpath", "@executable_path/Frameworks",
            try await assemble("main", "\t.text\n\t.globl _start\n_start:\n\tbrk #0x1\n\t.data\n\t.quad _demo_data\n\t.quad _system_data\n"),
            framework, "\(build)/libSystem.B.dylib", "-o", app + "/DemoMain"])
        let plist = try PropertyListSerialization.data(
            fromPropertyList: ["CFBundleExecutable": "DemoMain", "CFBundleIdentifier": "org.example.demo"], format: .binary, options: 0)
        try plist.write(to: URL(fileURLWithPath: app + "/Info.plist"))
        try FileManager.default.removeItem(atPath: build)
        return app
    }

    /// `DIR/Demo.ipa` from `DIR/Payload`, by Info-ZIP's `zip` (`-0`: stored, else deflate).
    static func zipPayload(in directory: String, level: String) async throws -> String {
        try await run("/bin/sh", ["-c", "cd \"$1\" && /usr/bin/zip -q -r -X \"$2\" Demo.ipa Payload", "sh", directory, level])
    }

    /// Every regular file under `directory`, relative, sorted.
    static func files(under directory: String) -> [String] {
        var files: [String] = []
        let enumerator = FileManager.default.enumerator(atPath: directory)
        while let relative = enumerator?.nextObject() as? String {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: directory + "/" + relative, isDirectory: &isDirectory), !isDirectory.boolValue {
                files.append(relative)
            }
        }
        return files.sorted()
    }

    @Test(arguments: ["-9", "-0"])
    func unpacksWhatInfoZipPacked(level: String) async throws {
        let directory = try Scratch.directory("zip")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = try await Self.makeApp(in: directory)
        _ = try await Self.zipPayload(in: directory, level: level)
        let archive = try ZipArchive(path: directory + "/Demo.ipa")
        #expect(archive.entries.contains { $0.name == "Payload/Demo.app/DemoMain" && $0.method == (level == "-0" ? 0 : 8) })
        try archive.extract(to: directory + "/out")
        let packed = Self.files(under: directory + "/Payload")
        #expect(packed.count == 3)
        #expect(Self.files(under: directory + "/out/Payload") == packed)
        for relative in packed {
            #expect(FileManager.default.contents(atPath: directory + "/out/Payload/" + relative)
                == FileManager.default.contents(atPath: directory + "/Payload/" + relative), "\(relative)")
        }
        #expect(FileManager.default.isExecutableFile(atPath: directory + "/out/Payload/Demo.app/DemoMain"))
        #expect(try AppBundle.executable(of: directory + "/out/Payload/Demo.app") == directory + "/out/Payload/Demo.app/DemoMain")
    }

    /// A zip of stored entries: (name, bytes, Unix mode); `badCRC` spoils the first CRC.
    static func zip(_ entries: [(String, [UInt8], UInt32)], badCRC: Bool = false) -> [UInt8] {
        var raw = entries.map { RawEntry($0.0, bytes: $0.1, mode: $0.2) }
        if badCRC, !raw.isEmpty { raw[0].crc = zipCRC32(raw[0].bytes) ^ 1 }
        let (local, tail) = handBuiltZip(raw, version: 10)
        return local + tail
    }

    @Test func unsafeArchivesAreRefusedWithOneLineNamingTheEntry() throws {
        let directory = try Scratch.directory("hostile")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file: UInt32 = 0o100644, link: UInt32 = 0o120777, fifo: UInt32 = 0o010644
        let cases: [(label: String, bytes: [UInt8], limits: ZipArchive.Limits, expected: String)] = [
            ("escape", Self.zip([("Payload/../../evil", [1], file)]), .init(), "entry \"Payload/../../evil\" has an empty, . or .. component"),
            ("absolute", Self.zip([("/tmp/evil", [1], file)]), .init(), "entry \"/tmp/evil\" is an absolute path"),
            ("symlink", Self.zip([("Payload/A.app/link", Array("/etc".utf8), link)]), .init(), "entry \"Payload/A.app/link\" is a symbolic link"),
            ("fifo", Self.zip([("Payload/fifo", [], fifo)]), .init(), "entry \"Payload/fifo\" is a special file (mode 10644)"),
            ("twice", Self.zip([("Payload/a", [1], file), ("Payload/a", [2], file)]), .init(), "entry \"Payload/a\" appears twice"),
            ("file-and-directory", Self.zip([("Payload/a", [1], file), ("Payload/a/b", [2], file)]), .init(), "entry \"Payload/a/b\" is both a file and a directory"),
            ("entries", Self.zip((0..<4).map { ("f\($0)", [1], file) }), .init(maxEntries: 3), "4 entries, more than the 3 allowed"),
            ("size", Self.zip([("a", [UInt8](repeating: 1, count: 8), file), ("b", [UInt8](repeating: 1, count: 8), file)]),
             .init(maxUnpackedBytes: 10), "it unpacks to more than the 10 bytes allowed"),
            ("crc", Self.zip([("a", [1, 2, 3], file)], badCRC: true), .init(), "entry \"a\" fails its CRC-32"),
            ("truncated", Array(Self.zip([("a", [1, 2, 3], file)]).dropLast(5)), .init(), "no end-of-central-directory record"),
        ]
        for (label, bytes, limits, expected) in cases {
            let archive = "\(directory)/\(label).ipa", out = "\(directory)/\(label)-out"
            try Data(bytes).write(to: URL(fileURLWithPath: archive))
            do {
                try ZipArchive(path: archive, limits: limits).extract(to: out)
                Issue.record("\(label): unpacked")
            } catch {
                #expect(error.description.hasPrefix(archive + ": ") && error.description.contains(expected), "\(label): \(error)")
                #expect(!error.description.contains("\n"), "\(label): \(error)")
            }
            // Nothing was written but (at most) the output directory itself.
            #expect(Self.files(under: out).isEmpty, "\(label)")
        }
        #expect(Self.files(under: directory).allSatisfy { $0.hasSuffix(".ipa") })
        // The well-formed control unpacks.
        try Data(Self.zip([("Payload/A.app/A", [1, 2, 3], 0o100755)])).write(to: URL(fileURLWithPath: directory + "/good.ipa"))
        try ZipArchive(path: directory + "/good.ipa").extract(to: directory + "/good")
        #expect(FileManager.default.contents(atPath: directory + "/good/Payload/A.app/A") == Data([1, 2, 3]))
    }

    /// A deflated entry whose stream holds more than its declared size (a zip bomb's
    /// shape): inflating stops at the declared size plus one byte and refuses it.
    @Test func deflateStreamLongerThanDeclaredIsRefused() async throws {
        let directory = try Scratch.directory("bomb")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory + "/Payload", withIntermediateDirectories: true)
        try Data(repeating: 0, count: 100_000).write(to: URL(fileURLWithPath: directory + "/Payload/zeros"))
        _ = try await Self.zipPayload(in: directory, level: "-9")
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: directory + "/Demo.ipa")))
        // The central entry's uncompressed size (offset 24 of its record) becomes 10.
        let central = try #require((0..<(bytes.count - 4)).last { bytes[$0..<($0 + 4)] == [0x50, 0x4b, 0x01, 0x02] })
        bytes.replaceSubrange((central + 24)..<(central + 28), with: [10, 0, 0, 0])
        try Data(bytes).write(to: URL(fileURLWithPath: directory + "/bomb.ipa"))
        let archive = try ZipArchive(path: directory + "/bomb.ipa")
        #expect(archive.entries.filter { !$0.isDirectory }.map(\.unpackedSize) == [10])
        #expect {
            try archive.extract(to: directory + "/out")
        } throws: { error in
            "\(error)".contains("entry \"Payload/zeros\" does not inflate to its 10 bytes")
        }
        #expect(Self.files(under: directory + "/out").isEmpty)
    }

    @Test func infoPlistExecutableMustBeAFileName() throws {
        let directory = try Scratch.directory("plist")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let app = directory + "/X.app"
        try FileManager.default.createDirectory(atPath: app, withIntermediateDirectories: true)
        try PropertyListSerialization.data(fromPropertyList: ["CFBundleExecutable": "../../bin/sh"], format: .xml, options: 0)
            .write(to: URL(fileURLWithPath: app + "/Info.plist"))
        #expect(throws: MachOError.bundle(path: app + "/Info.plist", what: "CFBundleExecutable \"../../bin/sh\" is not a file name")) {
            try AppBundle.executable(of: app)
        }
        // Without an Info.plist, the bundle's name is the executable's.
        try FileManager.default.removeItem(atPath: app + "/Info.plist")
        try Data([0]).write(to: URL(fileURLWithPath: app + "/X"))
        #expect(try AppBundle.executable(of: app) == app + "/X")
        // A macOS bundle: Contents/Info.plist names the executable in Contents/MacOS.
        let mac = directory + "/M.app"
        try FileManager.default.createDirectory(atPath: mac + "/Contents/MacOS", withIntermediateDirectories: true)
        try PropertyListSerialization.data(fromPropertyList: ["CFBundleExecutable": "Tool"], format: .xml, options: 0)
            .write(to: URL(fileURLWithPath: mac + "/Contents/Info.plist"))
        #expect(throws: MachOError.bundle(path: mac, what: "has no executable Tool (looked for \(mac)/Contents/MacOS/Tool)")) {
            try AppBundle.executable(of: mac)
        }
        try Data([0]).write(to: URL(fileURLWithPath: mac + "/Contents/MacOS/Tool"))
        #expect(try AppBundle.executable(of: mac) == mac + "/Contents/MacOS/Tool")
    }

    /// `stub-root`, `compare`, `install` and `launch` on the app as a directory and as an
    /// `.ipa`: the archive is unpacked once into the cache's work area, and a launch after
    /// `install` uses the installed closure of the same unpacked files.
    @Test func commandsTakeAnAppBundleAndAnIPA() async throws {
        let directory = try Scratch.directory("cli")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let app = try await Self.makeApp(in: directory)
        _ = try await Self.zipPayload(in: directory, level: "-6")
        let root = directory + "/root", cache = directory + "/cache"
        for target in [directory + "/Demo.ipa", app, directory + "/Payload", directory] {
            let stubRoot = try await Dyld3Binary.run(["stub-root", target, "--out", root, "--cache", cache], limitSeconds: 60)
            #expect(stubRoot.status == 0, "\(target): \(stubRoot.stderr)")
            #expect(stubRoot.lines.contains("  stub \(root)/usr/lib/libSystem.B.dylib (install name /usr/lib/libSystem.B.dylib)"), "\(stubRoot.stdout)")
            let compare = try await Dyld3Binary.run(["compare", target, "--root", root, "--cache", cache], limitSeconds: 60)
            #expect(compare.status == 0 && compare.stdout.contains("identical: 3 images"), "\(target): \(compare.stdout) \(compare.stderr)")
            let install = try await Dyld3Binary.run(["install", target, "--root", root, "--cache", cache], limitSeconds: 60)
            #expect(install.status == 0, "\(target): \(install.stderr)")
            let launch = try await Dyld3Binary.run(["launch", target, "--root", root, "--cache", cache, "--mode", "dyld3"], limitSeconds: 60)
            #expect(launch.status == 0 && launch.stdout.hasPrefix("path: dyld3, closure \(cache)/")
                    && launch.lines.contains { $0.hasPrefix("loaded and fixed up 3 images") }, "\(target): \(launch.stdout) \(launch.stderr)")
        }
        // The archive named relative to another directory is the same archive: its unpacked
        // tree and the closure installed for it are found (`env -C` sets the directory).
        let relative = try await Dyld3Binary.run(
            ["launch", "Demo.ipa", "--root", root, "--cache", cache, "--mode", "dyld3"], limitSeconds: 60, environment: ["-C", directory])
        #expect(relative.status == 0 && relative.lines.contains { $0.hasPrefix("loaded and fixed up 3 images") }, "\(relative.stdout) \(relative.stderr)")
        let work = try FileManager.default.contentsOfDirectory(atPath: cache + "/.work").sorted()
        #expect(work.count == 2 && work.allSatisfy { $0.hasPrefix("ipa-") }, "\(work)")
        // An archive with an unsafe entry: one line naming it, exit status 1.
        try Data(Self.zip([("Payload/Demo.app/../../../escape", [1], 0o100644)])).write(to: URL(fileURLWithPath: directory + "/Evil.ipa"))
        let evil = try await Dyld3Binary.run(["compare", directory + "/Evil.ipa", "--root", root, "--cache", cache], limitSeconds: 60)
        #expect(evil.status == 1)
        #expect(evil.stderr.split(separator: "\n").count == 1 && evil.stderr.contains("\"Payload/Demo.app/../../../escape\""), "\(evil.stderr)")
    }
}
