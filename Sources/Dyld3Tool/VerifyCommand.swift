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
            (PATH: KIND: WHAT), for a stale file the install that writes it again \
            (PATH: refresh: `dyld3 install …`), and a summary line that counts every file \
            of the cache by status, as --json's counts do (a status no file has, other than \
            valid, corrupt and stale, is left out).
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

    @Option(help: "The closure cache. Default: $DYLD3_CACHE, else cache/.") var cache: String?
    @Flag(help: "Print the results as JSON: every file with its status and problems, and the counts.") var json = false
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
        if json {
            print(Self.jsonReport(cache: cache, results: results).serialized())
        } else {
            for result in results {
                for problem in result.problems { print("\(result.path): \(problem)") }
                if result.status == .stale, let refresh = Self.refreshCommand(result.path, cache: cache) { print("\(result.path): refresh: `\(refresh)`") }
            }
            print(Self.summary(results))
        }
        if results.contains(where: { $0.status == .untrusted }) { throw ExitCode(Self.untrustedExitCode) }
        if results.contains(where: \.isUnusable) { throw ExitCode(Self.unusableExitCode) }
        if results.contains(where: { $0.status == .stale }) { throw ExitCode(Self.staleExitCode) }
    }

    /// `verify: N closures[ and M prelinked sets (K slid for a boot)], V valid, C corrupt, S stale`,
    /// then each other status that any file has (`2 not-a-closure`): closures and sets add
    /// up to the files, and the statuses add up to them too, each counted under the name
    /// `--json` counts it under.
    static func summary(_ results: [ClosureVerification]) -> String {
        let (sets, slid, caches) = (fileCount(results, ClosureCache.prelinkedSetExtension), fileCount(results, ClosureCache.slidSetExtension),
                                    fileCount(results, ClosureCache.slidCacheExtension))
        // valid, corrupt and stale always (the first statuses), the others when any file has them.
        let counts = ClosureVerification.Status.allCases.compactMap { status in
            let count = results.count { $0.status == status }
            return count > 0 || [.valid, .corrupt, .stale].contains(status) ? "\(count) \(status.rawValue)" : nil
        }
        return "verify: \(results.count - sets - slid - caches) closures" + (sets + slid > 0 ? " and \(sets + slid) prelinked sets" : "")
            + (slid > 0 ? " (\(slid) slid for a boot)" : "") + (caches > 0 ? " and \(caches) shared caches slid for a boot" : "")
            + ", " + counts.joined(separator: ", ")
    }

    /// How many of `results` are files named `*.extension`.
    static func fileCount(_ results: [ClosureVerification], _ extension: String) -> Int { results.count { $0.path.hasSuffix("." + `extension`) } }

    /// The `dyld3 install` that writes a stale file again: the app, root and cache its
    /// closure was built for (a prelinked set's own closure names them), with `--prelink`
    /// for a set. Nil when no closure beside it decodes, when the app is gone, or for a
    /// copy slid for a boot (the next launch writes it).
    static func refreshCommand(_ path: String, cache: ClosureCache) -> String? {
        var closurePath = path, prelink = false
        if path.hasSuffix("." + ClosureCache.prelinkedSetExtension) {
            closurePath = String(path.dropLast(ClosureCache.prelinkedSetExtension.count)) + ClosureCache.fileExtension
            prelink = true
        }
        guard closurePath.hasSuffix("." + ClosureCache.fileExtension), let dump = try? ClosureDump(path: closurePath) else { return nil }
        let binding = dump.closure.binding
        guard FileStatus.of(binding.app) != nil else { return nil }
        var command = "dyld3 install \(binding.app)"
        if !binding.root.isEmpty { command += " --root \(binding.root)" }
        if !binding.host.isEmpty, binding.host != binding.root + "/bin/host" { command += " --host \(binding.host)" }
        command += " --arch \(binding.arch) --cache \(cache.directory)"
        for inserted in binding.insertedPaths { command += " --insert \(inserted)" }
        if binding.policy.requireSignatures { command += " --require-signatures" }
        if binding.policy.libraryValidation { command += " --library-validation" }
        if dump.closure.contentOnlyIdentity { command += " --content-only" }
        if prelink { command += " --prelink" }
        return command
    }

    static func jsonReport(cache: ClosureCache, results: [ClosureVerification]) -> JSONValue {
        let files: [JSONValue] = results.map { result in
            .object([
                ("path", .string(result.path)),
                ("status", .string(result.status.rawValue)),
                ("problems", .array(result.problems.map { .object([("kind", .string($0.kind.rawValue)), ("message", .string($0.message))]) })),
            ])
        }
        let sets = fileCount(results, ClosureCache.prelinkedSetExtension) + fileCount(results, ClosureCache.slidSetExtension)
        let caches = fileCount(results, ClosureCache.slidCacheExtension)
        var counts: [(String, JSONValue)] = [
            ("files", .int(Int64(results.count))), ("closures", .int(Int64(results.count - sets - caches))), ("prelinked_sets", .int(Int64(sets))),
            ("slid_shared_caches", .int(Int64(caches))),
        ]
        for status in ClosureVerification.Status.allCases {
            counts.append((status.rawValue.replacingOccurrences(of: "-", with: "_"), .int(Int64(results.count { $0.status == status }))))
        }
        return .object([("schema_version", .int(JSONValue.schemaVersion)), ("cache", .string(cache.directory)), ("files", .array(files)), ("counts", .object(counts))])
    }
}
