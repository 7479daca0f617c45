import Foundation
import LaunchPlan
import Pager

/// What `dyld3 bench` measures and where it reads and writes.
package struct BenchConfiguration: Sendable {
    /// Framework counts of the generated apps (`tools/gen-app --preset`).
    package var dylibCounts: [Int]
    /// Samples per path and size, after one discarded warm-up round.
    package var runs: Int
    package var arch: String
    /// Fixup style of the Mach-O apps: `chained` or `opcodes`.
    package var style: String
    /// The repository: `tools/gen-app` and `tools/glibc-harness.c` are found under it.
    package var repositoryRoot: String
    /// Generated apps (`bench-apps/`), the bench's closure cache and the compiled harness go under here.
    package var workDirectory: String
    /// The `dyld3` executable spawned for the fresh-process measurements; nil skips them.
    package var toolPath: String?
    /// Also measure cold samples (page cache emptied before each), after the warm ones.
    package var cold: Bool
    /// How to empty the page cache; nil chooses (``EvictionMethod/choose(requested:dropCachesWritable:)``).
    package var eviction: EvictionMethod?
    /// Also measure page-in linking (`--fixups page-in`): launch, touches, dirty pages.
    package var pageIn = false
    /// Page-in: the pages one fault fills (``LaunchOptions/faultAround``).
    package var faultAround = FixupPager.defaultFaultAround
    /// Objective-C apps (`tools/gen-app --objc-*`) instead of the C-only ones; nil: C-only.
    /// The glibc paths keep the C-only twin of the same size (an ELF twin has no ObjC).
    package var objc: ObjCShape?

    package init(dylibCounts: [Int] = [1, 10, 100, 400, 1000], runs: Int = 11,
                arch: String = "x86_64", style: String = "chained", repositoryRoot: String, workDirectory: String? = nil,
                toolPath: String?, cold: Bool = false, eviction: EvictionMethod? = nil) {
        (self.dylibCounts, self.runs, self.arch, self.style) = (dylibCounts, runs, arch, style)
        self.repositoryRoot = repositoryRoot
        self.workDirectory = workDirectory ?? repositoryRoot + "/build"
        (self.toolPath, self.cold, self.eviction) = (toolPath, cold, eviction)
    }

    /// How `--cold` samples empty the page cache; nil without `--cold`.
    func evictionMethod() throws(CommandFailure) -> EvictionMethod? { cold ? try EvictionMethod.choose(requested: eviction) : nil }

    /// The seed of every generated app: same seed, same bytes, so apps are reused.
    package static let seed = 1

    /// The nearest directory at or above `start` holding `tools/gen-app`.
    package static func findRepositoryRoot(from start: String) -> String? {
        var directory = URL(fileURLWithPath: start).standardizedFileURL
        while true {
            if FileManager.default.isExecutableFile(atPath: directory.appendingPathComponent("tools/gen-app").path) { return directory.path }
            let parent = directory.deletingLastPathComponent()
            if parent.path == directory.path { return nil }
            directory = parent
        }
    }
}
