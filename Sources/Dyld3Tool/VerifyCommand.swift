import ArgumentParser
import Foundation
import ClosureCache
import LaunchPlan
import MachOInspect
import LoaderSystem

/// `dyld3 verify`: checks every file of the closure cache, the check CI runs.
struct VerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check every closure in the cache: format, consistency and staleness.",
        discussion: """
            Each file of the cache is checked: that it is a closure (extension and magic), that \
            only its owner can write it, its header, checksum, zstd frame and structure, the \
            consistency of its fixups, segments and indices, and whether every image it was \
            built from is still the same on disk. Prints one line per problem \
            (PATH: KIND: WHAT) and a summary line, which counts every file of the cache; \
            corrupt there counts every unusable file (corrupt, incompatible, not-a-closure, \
            untrusted).
            Exit status: 0 when every closure is valid (an empty cache included); 2 when there \
            is no cache directory; 5 when any closure is untrusted (another user could have \
            written it or its directory, or with --trust it is not signed by that key); else 3 \
            when a file is unusable (corrupt, incompatible, not a closure, invalid for its \
            images, misplaced under another app's name); else 4 when closures are stale.
            """)

    static let unusableExitCode: Int32 = 3
    static let staleExitCode: Int32 = 4
    static let noCacheExitCode: Int32 = 2
    static let untrustedExitCode: Int32 = 5

    @Option(help: "The closure cache. Default: $DYLD3_CACHE, else cache/.")
    var cache: String?

    @Flag(help: "Print the results as JSON: every file with its status and problems, and the counts.")
    var json = false

    @OptionGroup var trust: TrustOptions

    func run() throws {
        let cache = ClosureCache.resolve(cache)
        guard FileStatus.of(cache.directory)?.isDirectory == true else {
            let absolute = cache.directory.hasPrefix("/") ? cache.directory : FileManager.default.currentDirectoryPath + "/" + cache.directory
            let fix = self.cache == nil && ProcessInfo.processInfo.environment["DYLD3_CACHE"] == nil
                ? "the default cache is cache/ in the current directory: run from where `dyld3 install` ran, or give --cache DIR"
                : "give --cache DIR, the directory `dyld3 install --cache DIR` wrote"
            CommandFailure(what: absolute, why: "no cache directory", fix: fix, kind: "no-cache").report(json: json)
            throw ExitCode(Self.noCacheExitCode)
        }
        let trustKey = try CommandFailure.reporting(json: json) { try trust.trustKey() }
        let results = ClosureVerification.verify(cache, trusting: trustKey, alwaysHash: trust.hashImages)
        let valid = results.count { $0.status == .valid }
        let stale = results.count { $0.status == .stale }
        let unusable = results.count(where: \.isUnusable)
        if json {
            print(Self.jsonReport(cache: cache, results: results).serialized())
        } else {
            for result in results {
                for problem in result.problems { print("\(result.path): \(problem)") }
            }
            let sets = results.count { $0.path.hasSuffix("." + ClosureCache.prelinkedSetExtension) }
            let slid = results.count { $0.path.hasSuffix("." + ClosureCache.slidSetExtension) }
            print("verify: \(results.count - sets - slid) closures" + (sets > 0 ? " and \(sets) prelinked sets" : "")
                  + (slid > 0 ? " (\(slid) slid for a boot)" : "")
                  + ", \(valid) valid, \(unusable) corrupt, \(stale) stale")
        }
        if results.contains(where: { $0.status == .untrusted }) { throw ExitCode(Self.untrustedExitCode) }
        if unusable > 0 { throw ExitCode(Self.unusableExitCode) }
        if stale > 0 { throw ExitCode(Self.staleExitCode) }
    }

    static func jsonReport(cache: ClosureCache, results: [ClosureVerification]) -> JSONValue {
        let files: [JSONValue] = results.map { result in
            .object([
                ("path", .string(result.path)),
                ("status", .string(result.status.rawValue)),
                ("problems", .array(result.problems.map { .object([("kind", .string($0.kind.rawValue)), ("message", .string($0.message))]) })),
            ])
        }
        var counts: [(String, JSONValue)] = [("closures", .int(Int64(results.count)))]
        for status in ClosureVerification.Status.allCases {
            counts.append((status.rawValue.replacingOccurrences(of: "-", with: "_"), .int(Int64(results.count { $0.status == status }))))
        }
        return .object([("schema_version", .int(JSONValue.schemaVersion)), ("cache", .string(cache.directory)), ("files", .array(files)), ("counts", .object(counts))])
    }
}
