import Foundation
import TestSupport
import Testing

/// Every launch path goes through one launcher: a per-image closure and a prelinked set (its
/// copy slid for the boot, or slid at launch) are sources of images for `Launcher.run`, and
/// it and dyld2 end in the one `LaunchTail`, the only code that runs a launch's `main`, its
/// thread-local step and its final protections.
@Suite(.bounded) struct OneLauncherTests {
    /// Every Swift source under Sources/, by path relative to the repository.
    static func sources() throws -> [(path: String, text: String)] {
        let root = Paths.repoRoot.appendingPathComponent("Sources")
        let files = FileManager.default.enumerator(atPath: root.path)?.compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") } ?? []
        return try files.sorted().map { ("Sources/" + $0, try String(contentsOfFile: root.appendingPathComponent($0).path, encoding: .utf8)) }
    }

    /// The files of `sources` that contain `needle` outside comments.
    static func files(_ sources: [(path: String, text: String)], containing needle: String) -> [String] {
        sources.filter { source in
            source.text.split(separator: "\n").contains { line in
                let code = line.trimmingCharacters(in: .whitespaces)
                return !code.hasPrefix("//") && code.contains(needle)
            }
        }.map(\.path)
    }

    @Test func everyLaunchPathEndsInTheOneTail() throws {
        let sources = try Self.sources()
        #expect(sources.count > 100)
        // One place runs `main` and the initializers of a launch (dlopen runs the initializers of what it adds).
        #expect(Self.files(sources, containing: "CodeRunner.runMain(") == ["Sources/LoaderCore/Launch.swift"])
        #expect(Self.files(sources, containing: "ThreadLocals.apply(") == ["Sources/LoaderCore/Launch.swift"])
        // Its steps are built by the dyld3 launcher and by dyld2, nowhere else.
        #expect(Self.files(sources, containing: "LaunchTail(") == ["Sources/Dyld2/SlowPath.swift", "Sources/Dyld3/Launcher.swift"])
        // Every dyld3 source of images is launched by the one launcher.
        #expect(Self.files(sources, containing: "Launcher.run(") == ["Sources/Dyld3/FastPath.swift", "Sources/Dyld3/PrelinkedLaunch.swift"])
        #expect(Self.files(sources, containing: ": LaunchSource {").count == 2)
        // No launch path sets the final protections or attaches dlopen by itself (a `dlopen`
        // protects what it adds; the bench's floor protects what it maps, as a launch would).
        for step in [".applyProtections()", ".applyPrelinkedProtections()", ".attach("] {
            let callers = Self.files(sources, containing: step).filter { !$0.hasSuffix("DynamicLoader.swift") && !$0.hasPrefix("Sources/LaunchBench/") }
            #expect(callers == ["Sources/LoaderCore/Launch.swift"], "\(step)")
        }
    }
}
