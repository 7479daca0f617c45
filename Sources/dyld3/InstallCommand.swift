import ArgumentParser
import Foundation
import LaunchClosure
import LoaderCore

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

    func run() throws {
        let cache = options.closureCache
        let targets: [String]
        do {
            targets = try AppLocator.expand(apps)
        } catch {
            FileHandle.standardError.write(Data("dyld3: \(error)\n".utf8))
            throw ExitCode(1)
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
                try ClosureFile.write(closure, to: path)
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
