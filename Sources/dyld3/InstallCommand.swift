import ClosureBuild
import ArgumentParser
import Foundation
import LaunchClosure
import LoaderCore
import ClosureFormat

/// `dyld3 install APP…`: builds launch closures out of process, one per app and arch.
struct InstallCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "install",
        abstract: "Build and cache launch closures for apps.",
        discussion: """
            APP is a .app directory, a directory of .app bundles, an executable, a dylib or a \
            bundle. Each gets one closure per architecture in the cache, written atomically. \
            An app that cannot launch gets no closure and the launch error.
            """)

    @Argument(help: "Apps to install.")
    var apps: [String]

    @OptionGroup var options: AppOptions





    @Flag(help: "Identify images by content only (no inode or mtime): for caches that travel between machines.")
    var contentOnly = false

    @Option(help: "Sign every closure with this private key (dyld3 key generate): launches with --trust accept only signed closures.")
    var sign: String?

    func run() throws {
        let cache = options.closureCache
        let targets: [String]
        do {
            targets = try AppLocator.expand(apps)
        } catch {
            FileHandle.standardError.write(Data("dyld3: \(error)\n".utf8))
            throw ExitCode(1)
        }
        var signer: ClosureSigningKey?
        if let sign {
            do {
                signer = try ClosureSigningKey(contentsOf: sign)
            } catch {
                throw ValidationError("--sign \(error)")
            }
        }
        do throws(ClosureOwnership.Problem) {
            try cache.checkTrust()
        } catch {
            FileHandle.standardError.write(Data("dyld3: warning: launches will refuse closures in \(cache.directory): \(error)\n".utf8))
        }
        do {
            try cache.prepareForWriting()
        } catch {
            FileHandle.standardError.write(Data("dyld3: \(error)\n".utf8))
            throw ExitCode(1)
        }
        let progress = isatty(1) != 0
        var failures = 0
        for (number, app) in targets.enumerated() {
            do {
                let roots = try options.roots(for: app)
                let closure = try ClosureBuilder.build(roots: roots.paths, arch: roots.arch, root: options.root, contentOnlyIdentity: contentOnly)
                let path = cache.closurePath(forApp: roots.paths.last!, arch: roots.arch)
                var untrusted: String?
                do throws(ClosureError) {
                    try ClosureFile.checkTrust(path)
                } catch {
                    if case let .untrusted(_, what) = error { untrusted = what } else { untrusted = "\(error)" }
                }
                do {
                    try ClosureFile.write(closure, to: path, signedWith: signer)
                } catch {
                    guard let untrusted else { throw error }
                    throw ClosureError.writeFailed(path: path, what: "cannot replace the untrusted closure there (\(untrusted)): \(error); "
                        + "launches refuse it; remove it as its owner or root, or use another --cache")
                }
                if let untrusted {
                    FileHandle.standardError.write(Data("dyld3: \(path): replaced an untrusted closure (\(untrusted))\n".utf8))
                }
                let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
                let line = "\(app) [\(roots.arch)]: \(closure.images.count) images, \(closure.totalRebases) rebases, "
                    + "\(closure.totalBinds) binds -> \(path) (\(size) bytes)"
                print(progress ? "[\(number + 1)/\(targets.count)] " + line : line)
            } catch {
                failures += 1
                FileHandle.standardError.write(Data("dyld3: \(app): no closure: \(error)\n".utf8))
            }
        }
        if failures > 0 { throw ExitCode(1) }
    }
}
