import ArgumentParser
import Dyld2
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

    @Option(help: "The launch path: dyld2 (the slow path: parse, resolve and look up on every launch).")
    var mode: LaunchMode = .dyld2

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
        case dyld2
    }

    func run() throws {
        do {
            let options = try launchOptions()
            let launch = try SlowPath.launch(options)
            defer { launch.memory.release() }
            print(LaunchOutput.render(launch.report, json: json, stats: stats), terminator: "")
        } catch let error as LoadError {
            if json {
                print(JSONValue.object([("error", .string(error.description))]).serialized())
            }
            FileHandle.standardError.write(Data("dyld3: \(error)\n".utf8))
            throw ExitCode(1)
        }
    }

    func launchOptions() throws -> LaunchOptions {
        let target = try AppLocator.mainImage(of: app)
        let architecture = try arch ?? AppLocator.defaultArchitecture(of: target)
        let fileType = try ImageFile.load(path: target, arch: architecture).image.header.fileType
        var roots = [target]
        if fileType == .bundle {
            let hostPath = host ?? root.map { $0 + "/bin/host" }
            if let hostPath, FileManager.default.fileExists(atPath: hostPath) {
                roots.insert(hostPath, at: 0)
            } else if host != nil {
                throw LoadError.unusable(path: host!, reason: "host executable not found")
            }
        }
        return LaunchOptions(roots: roots, arch: architecture, root: root, slide: try parseSlide(), run: !noRun)
    }

    func parseSlide() throws -> UInt64? {
        guard let slide else { return nil }
        let value = slide.hasPrefix("0x") ? UInt64(slide.dropFirst(2), radix: 16) : UInt64(slide)
        guard let value else { throw ValidationError("--slide \(slide) is not a number") }
        return value
    }
}

/// Finds the image to launch inside what the user named.
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

    /// The host's architecture if the file has it, else its first slice's.
    static func defaultArchitecture(of path: String) throws -> String {
        let available = try ImageFile.architectures(path: path)
        return available.contains(CodeRunner.hostArchitecture) ? CodeRunner.hostArchitecture : available[0]
    }
}

/// The text and JSON views of a launch report.
enum LaunchOutput {
    static func render(_ report: LaunchReport, json: Bool, stats: Bool) -> String {
        if json { return jsonObject(report).serialized() + "\n" }
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

    static func jsonObject(_ report: LaunchReport) -> JSONValue {
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
        ])
    }
}
