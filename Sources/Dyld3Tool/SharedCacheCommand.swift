import ArgumentParser
import Foundation
import LaunchPlan
import MachOInspect
import MachOReader
import SharedCache
import SharedCacheBuild

/// `dyld3 shared-cache`: the system's dylibs built once into one file in Apple's format.
struct SharedCacheCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "shared-cache",
        abstract: "Build a dyld shared cache of a root's dylibs (docs/shared-cache.md); `dyld3 inspect CACHE` lists one.",
        subcommands: [SharedCacheBuildCommand.self, SharedCacheVerifyCommand.self])

    /// `dyld3 inspect` of a file with the `dyld_v1` magic.
    /// `inspect CACHE`: the cache's tables; with `image`, that image of it (`tables` as for a file).
    static func inspect(_ path: String, bytes: ByteView, json: Bool, image: String? = nil, tables: Set<InspectTable> = []) throws {
        var out = StandardOutput()
        defer { out.flush() }
        do throws(MachOError) {
            let cache = try DyldCacheFile(parsing: bytes)
            if let image {
                out.write(try DyldCacheReport.imageText(cache, path: path, name: image, tables: tables))
            } else {
                out.write(json ? try DyldCacheReport.json(cache, path: path).serialized() + "\n" : try DyldCacheReport.text(cache, path: path))
            }
        } catch {
            throw error.inFile(path)
        }
    }
}

/// `dyld3 shared-cache build --root ROOT`.
struct SharedCacheBuildCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "build",
        abstract: "Build the shared cache of every dylib of a root, where Apple keeps it for the root's platform.",
        discussion: """
            Every Mach-O dylib of ROOT (each file once) is laid out in one range at the shared \
            region's address (0x7ff800000000 for x86_64, 0x180000000 for arm64), each image's \
            segments together; every fixup between them is applied and only the slide is left, \
            in slide info version 2. The file is written atomically at \
            ROOT/System/Library/dyld/dyld_shared_cache_ARCH (macOS roots) or \
            ROOT/System/Library/Caches/com.apple.dyld/dyld_shared_cache_ARCH (iOS roots), or at --out.
            """)

    @Option(help: "The root whose dylibs the cache holds.") var root: String
    @Option(help: "The architecture (x86_64 or arm64).") var arch: String = "x86_64"
    @Option(help: "Where to write the cache instead of its place in the root.") var out: String?
    @Flag(help: "Print JSON.") var json = false

    func run() throws {
        let built = try CommandFailure.reporting(json: json) { try SharedCacheBuilder.build(root: root, arch: arch, output: out) }
        if json {
            print(JSONValue.object([
                ("cache", .string(built.path)), ("arch", .string(built.arch)), ("images", .int(Int64(built.images.count))),
                ("mappings", .int(Int64(built.mappings.count))), ("bytes", .int(Int64(built.size))),
                ("slide_locations", .int(Int64(built.slideLocations))),
            ]).serialized())
        } else {
            print("\(built.path): \(built.images.count) images, \(built.mappings.count) mappings, \(built.size) bytes, \(built.slideLocations) slide locations")
        }
    }
}

/// `dyld3 shared-cache verify CACHE [--root ROOT]`.
struct SharedCacheVerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check a shared cache: trusted, intact, and (with --root) built from the root's dylibs as they are now.",
        discussion: """
            Untrusted: the cache or its directory is owned or writable by another user. Corrupt: its \
            tables do not read within the file, a slide chain leaves its page or a pointer leaves \
            the cache, or its bytes no longer hash to its UUID. Stale (with --root): a source dylib's \
            inode or modification time differs from the image table's.
            Exit status: 0 valid, 3 corrupt, 4 stale, 5 untrusted (as `dyld3 verify`).
            """)

    @Argument(help: "The shared cache file.") var cache: String
    @Option(help: "The root it was built from: its dylibs are checked against the image table.") var root: String?
    @Flag(help: "Print JSON.") var json = false

    func run() throws {
        let result = SharedCacheVerification(cache: cache, root: root)
        if json {
            print(JSONValue.object([
                ("cache", .string(result.path)), ("status", .string(result.status.rawValue)), ("images", .int(Int64(result.images))),
                ("problems", .array(result.problems.map(JSONValue.string))),
            ]).serialized())
        } else {
            for problem in result.problems { print(problem) }
            print("\(result.path): \(result.status.rawValue), \(result.images) images")
        }
        let exitCodes: [SharedCacheVerification.Status: Int32] = [
            .corrupt: VerifyCommand.unusableExitCode, .stale: VerifyCommand.staleExitCode, .untrusted: VerifyCommand.untrustedExitCode,
        ]
        if let code = exitCodes[result.status] { throw ExitCode(code) }
    }
}
