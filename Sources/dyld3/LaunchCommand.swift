import ArgumentParser
import Dyld2
import Dyld3
import LaunchClosure
import Foundation
import LoaderCore
import MachOInspect
import MachOReader

/// `dyld3 launch APP`: load, fix up and run a Mach-O app inside this process.
struct LaunchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "launch",
        abstract: "Load, fix up and run a Mach-O app in this process.",
        discussion: """
            APP is an executable, a .app directory, a dylib (loaded as the root image, no main) \
            or a bundle (loaded into a host executable, like a Python extension module). \
            x86_64 code runs on this x86_64 host; other architectures stop after fixups.
            """)

    @Argument(help: "The app: an executable, a .app directory, a dylib or a bundle.")
    var app: String

    @Option(help: "dyld3: apply the cached closure; dyld2: the slow path (parse, resolve, look up on every launch); auto: dyld3 when a valid closure exists, else dyld2.")
    var mode: LaunchMode = .auto

    @Option(help: "The closure cache. Default: $DYLD3_CACHE, else cache/.")
    var cache: String?

    @Flag(help: "After a fallback to dyld2, write a fresh closure.")
    var rebuild = false

    @Option(help: "The system root absolute install names are looked up under.")
    var root: String?

    @Option(help: "The architecture to load. Default: the host's if the file has it, else its first slice.")
    var arch: String?

    @Option(help: "Force the main image's slide (hex with 0x, or decimal; page-aligned).")
    var slide: String?

    @Option(help: "The host executable a bundle is loaded into. Default: ROOT/bin/host when it exists.")
    var host: String?

    @Flag(help: "Stop after fixups: run no initializer and no main.")
    var noRun = false

    @Flag(help: "Print where the time went (phases) and counts.")
    var stats = false

    @Flag(help: "Print the launch report as JSON.")
    var json = false

    enum LaunchMode: String, ExpressibleByArgument, CaseIterable {
        case dyld2, dyld3, auto
    }

    func run() throws {
        var closurePath: String?
        do {
            let options = try launchOptions()
            let path = ClosureCache.resolve(cache).closurePath(forApp: options.roots.last!, arch: options.arch)
            var fallback: ClosureError?
            var launch: Launch?
            if mode != .dyld2 {
                do {
                    launch = try FastPath.launch(closurePath: path, slide: options.slide, run: options.run)
                    closurePath = path
                } catch let error as ClosureError {
                    if mode == .dyld3 {
                        FileHandle.standardError.write(Data("dyld3: --mode dyld3: \(error)\n".utf8))
                        throw ExitCode(1)
                    }
                    fallback = error
                    if !json { FileHandle.standardError.write(Data("dyld3: closure not used (\(error)); launching with dyld2\n".utf8)) }
                }
            }
            if launch == nil {
                launch = try SlowPath.launch(options)
                if rebuild, fallback != nil {
                    let closure = try ClosureBuilder.build(roots: options.roots, arch: options.arch, root: root)
                    try ClosureCache.resolve(cache).prepareForWriting()
                    try ClosureFile.write(closure, to: path)
                    if !json { FileHandle.standardError.write(Data("dyld3: wrote a fresh closure to \(path)\n".utf8)) }
                }
            }
            guard let launch else { return }
            defer { launch.memory.release() }
            print(LaunchOutput.render(launch.report, json: json, stats: stats, closure: closurePath, fallback: fallback), terminator: "")
        } catch let error as LoadError {
            if json { print(JSONValue.object([("error", .string(error.description))]).serialized()) }
            FileHandle.standardError.write(Data("dyld3: \(error)\n".utf8))
            throw ExitCode(1)
        } catch let error as ClosureError {
            FileHandle.standardError.write(Data("dyld3: \(error)\n".utf8))
            throw ExitCode(1)
        }
    }

    func launchOptions() throws -> LaunchOptions {
        let roots = try AppLocator.roots(for: app, arch: arch, root: root, host: host)
        return LaunchOptions(roots: roots.paths, arch: roots.arch, root: root, slide: try parseSlide(), run: !noRun)
    }

    func parseSlide() throws -> UInt64? {
        guard let slide else { return nil }
        let value = slide.hasPrefix("0x") ? UInt64(slide.dropFirst(2), radix: 16) : UInt64(slide)
        guard let value else { throw ValidationError("--slide \(slide) is not a number") }
        return value
    }
}

/// Finds the images to launch inside what the user named.
enum AppLocator {
    /// `X.app` → `X.app/X`; anything else is the image itself.
    static func mainImage(of app: String) throws -> String {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: app, isDirectory: &isDirectory) else {
            throw LoadError.unusable(path: app, reason: "no such file or directory")
        }
        guard isDirectory.boolValue else { return app }
        let name = (app as NSString).lastPathComponent
        guard name.hasSuffix(".app") else {
            throw LoadError.unusable(path: app, reason: "is a directory but not a .app bundle")
        }
        let executable = app + "/" + String(name.dropLast(4))
        guard FileManager.default.fileExists(atPath: executable) else {
            throw LoadError.unusable(path: app, reason: "has no executable \(String(name.dropLast(4)))")
        }
        return executable
    }

    /// Apps named on the command line, with directories of `.app` bundles expanded.
    static func expand(_ apps: [String]) throws -> [String] {
        var expanded: [String] = []
        for app in apps {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: app, isDirectory: &isDirectory), isDirectory.boolValue, !app.hasSuffix(".app") {
                let bundles = try FileManager.default.contentsOfDirectory(atPath: app).filter { $0.hasSuffix(".app") }.sorted()
                guard !bundles.isEmpty else { throw ValidationError("\(app) holds no .app bundle") }
                expanded += bundles.map { app + "/" + $0 }
            } else {
                expanded.append(app)
            }
        }
        return expanded
    }

    /// The launch roots for an app (a bundle gets its host first) and the architecture.
    static func roots(for app: String, arch: String?, root: String?, host: String?) throws -> (paths: [String], arch: String) {
        let target = try mainImage(of: app)
        let architecture = try arch ?? defaultArchitecture(of: target)
        let fileType = try ImageFile.load(path: target, arch: architecture).image.header.fileType
        guard fileType == .bundle else { return ([target], architecture) }
        if let host {
            guard FileManager.default.fileExists(atPath: host) else {
                throw LoadError.unusable(path: host, reason: "host executable not found")
            }
            return ([host, target], architecture)
        }
        if let root, FileManager.default.fileExists(atPath: root + "/bin/host") {
            return ([root + "/bin/host", target], architecture)
        }
        return ([target], architecture)
    }

    /// The host's architecture if the file has it, else its first slice's.
    static func defaultArchitecture(of path: String) throws -> String {
        let available = try ImageFile.architectures(path: path)
        return available.contains(CodeRunner.hostArchitecture) ? CodeRunner.hostArchitecture : available[0]
    }
}

/// The text and JSON views of a launch report.
enum LaunchOutput {
    static func render(_ report: LaunchReport, json: Bool, stats: Bool, closure: String?, fallback: ClosureError?) -> String {
        if json { return jsonObject(report, closure: closure, fallback: fallback).serialized() + "\n" }
        var out = ""
        if report.ran, let result = report.result {
            out += "main returned \(result)\n"
        } else {
            out += "loaded and fixed up \(report.images.count) images; not run: \(report.notRunReason ?? "?")\n"
        }
        if stats {
            out += "\(report.mode): \(report.images.count) images, \(report.rebases) rebases, \(report.binds) binds, "
                + "\(report.symbolLookups) symbol lookups, slide 0x\(String(report.slide, radix: 16))\n"
            for phase in LaunchReport.Phase.allCases {
                guard let nanoseconds = report.timings[phase] else { continue }
                let microseconds = Double(nanoseconds) / 1000
                out += "  \(phase.rawValue.padding(toLength: 16, withPad: " ", startingAt: 0)) \(String(format: "%10.1f", microseconds)) µs\n"
            }
        }
        return out
    }

    static func jsonObject(_ report: LaunchReport, closure: String?, fallback: ClosureError?) -> JSONValue {
        var timings: [(String, JSONValue)] = []
        for phase in LaunchReport.Phase.allCases {
            if let nanoseconds = report.timings[phase] { timings.append((phase.rawValue, .int(nanoseconds))) }
        }
        return .object([
            ("mode", .string(report.mode)),
            ("images", .array(report.images.map(JSONValue.string))),
            ("rebases", .int(Int64(report.rebases))),
            ("binds", .int(Int64(report.binds))),
            ("symbol_lookups", .int(Int64(report.symbolLookups))),
            ("slide", .uint(report.slide)),
            ("timings", .object(timings)),
            ("ran", .bool(report.ran)),
            ("result", report.result.map { .int(Int64($0)) } ?? .null),
            ("not_run_reason", report.notRunReason.map(JSONValue.string) ?? .null),
            ("initializers", .array(report.initializers.map(JSONValue.string))),
            ("digest", .string("0x" + String(report.digest, radix: 16))),
            ("closure", closure.map(JSONValue.string) ?? .null),
            ("fallback_reason", fallback.map { .string("\($0.kind): \($0)") } ?? .null),
        ])
    }
}
