import ClosureBuild
import Dyld2
import Foundation
import ClosureCache
import LoaderCore
import MachOReader
import TestSupport
import Testing
import LaunchPlan
import ClosureFormat

/// Graphs far deeper than any app, generated at test time (`MachOBuilder`): a re-export
/// chain (5,000 dylibs by default, 100,000 with `DYLD3_REEXPORT_DEPTH=100000`, about 11
/// minutes in a debug build) and a 2,000-deep `@rpath` chain. Each must give the answer
/// the generator put there, with work proportional to the graph (counted, not timed).
@Suite(.serialized, .bounded)
struct DeepGraphTests {
    /// Depth of the re-export chain the closure builder and dyld2's resolver walk
    /// (`DYLD3_REEXPORT_DEPTH` changes it; 100,000 passes, docs/reliability.md).
    static let reexportDepth = ProcessInfo.processInfo.environment["DYLD3_REEXPORT_DEPTH"].flatMap(Int.init) ?? 5_000
    /// A whole dyld2 launch maps every image (two mappings each); Linux allows 65,530
    /// mappings per process, so the mapped launch uses a shallower chain.
    static let mappedLaunchDepth = min(reexportDepth, 20_000)
    /// Where the bottom dylib's `_bottom` is, from its base.
    static let bottomOffset: UInt64 = 0xABC

    /// `main` binds `_bottom` from `l1.dylib` (its only dependency, ordinal 1); each `lK`
    /// re-exports `lK+1`; the last exports `_bottom` at `bottomOffset`.
    static func writeReexportChain(depth: Int, in directory: String) throws -> String {
        try MachOBuilder.executable(binding: "_bottom", from: "@loader_path/l1.dylib", .load).write(to: directory + "/main")
        for level in 1...depth {
            var dylib = MachOBuilder(fileType: .dylib, installName: "@loader_path/l\(level).dylib")
            if level < depth {
                dylib.dependencies = [(.reexport, "@loader_path/l\(level + 1).dylib")]
            } else {
                dylib.export = ("_bottom", bottomOffset)
            }
            try dylib.write(to: directory + "/l\(level).dylib")
        }
        return directory + "/main"
    }

    @Test func generatedImagesAreWellFormedForObjdump() async throws {
        let directory = try Scratch.directory("reexport-objdump")
        defer { Scratch.remove(directory) }
        let main = try Self.writeReexportChain(depth: 2, in: directory)
        for file in [main, directory + "/l1.dylib", directory + "/l2.dylib"] {
            let (accepted, message) = try await Oracle.objdumpAccepts(["--macho", "--private-headers", file])
            #expect(accepted, "\(file): \(message)")
        }
        let exports = try await Oracle.objdump(["--macho", "--exports-trie", directory + "/l2.dylib"])
        #expect(exports.contains("0x00000ABC  _bottom"), "\(exports)")
        let binds = try await Oracle.objdump(["--macho", "--dyld-info", main])
        #expect(binds.contains("_bottom"), "\(binds)")
    }

    /// The bind `main` makes, as the closure builder and dyld2's resolver resolve it, at
    /// the full depth: the bottom image, at the offset the generator wrote.
    /// `DYLD3_DEEP_GRAPH_OUT=DIR` keeps the chain in DIR/reexport.
    @Test func aReexportChainOfAnyDepthResolvesToTheBottom() throws {
        let depth = Self.reexportDepth
        let kept = ProcessInfo.processInfo.environment["DYLD3_DEEP_GRAPH_OUT"].map { $0 + "/reexport" }
        if let kept { try FileManager.default.createDirectory(atPath: kept, withIntermediateDirectories: true) }
        let directory = try kept ?? Scratch.directory("reexport")
        defer { if kept == nil { Scratch.remove(directory) } }
        let main = try Self.writeReexportChain(depth: depth, in: directory)
        let expected = BindTarget.image(depth, offset: Self.bottomOffset)

        let closure = try ClosureBuilder.build(roots: [main], arch: "arm64", root: nil)
        #expect(closure.images.count == depth + 1)
        #expect(closure.images[depth].path == directory + "/l\(depth).dylib")
        let bound = try closure.fixups(ofImage: 0)
        #expect(bound.map(\.kind) == [.bind(expected, addend: 0)])

        let graph = try DependencyGraph(roots: [main], arch: "arm64", root: nil)
        let plans = try graph.nodes.map { node throws(LoadError) in try ImagePlan(image: node.image, path: node.path, sliceOffset: 0) }
        var resolver = try FixupResolver(graph: graph, plans: plans)
        var resolved: [ResolvedFixup] = []
        try resolver.resolve(image: 0) { (fixup) throws(LoadError) in resolved.append(fixup) }
        #expect(resolved.map(\.kind) == [.bind(expected, addend: 0)])
        // One lookup per image of the chain: the search is linear in the depth.
        #expect(resolver.symbolLookups == depth)
    }

    /// A whole dyld2 launch (mapped, fixed up, not run) stores the bottom image's address.
    @Test func dyld2LaunchThroughADeepReexportChainStoresTheBottomAddress() throws {
        let depth = Self.mappedLaunchDepth
        let directory = try Scratch.directory("reexport-launch")
        defer { Scratch.remove(directory) }
        let main = try Self.writeReexportChain(depth: depth, in: directory)
        let launch = try SlowPath.launch(LaunchOptions(roots: [main], arch: "arm64", root: nil, run: false))
        defer { launch.memory.release() }
        let stored = try launch.memory.load(image: 0, vmOffset: MachOBuilder.dataOffset)
        #expect(stored == launch.memory.images[depth].base + Self.bottomOffset)
    }

    /// Depth of the `@rpath` chain.
    static let rpathDepth = 2_000

    /// `main` (LC_RPATH `@executable_path/Frameworks`) needs `@rpath/r1.dylib`; each `rK`
    /// in `Frameworks` needs `@rpath/rK+1.dylib` and adds its own rpath, an absent
    /// `@loader_path/missingK`: the search for `rK+1` tries every ancestor's absent rpath
    /// before `main`'s. `DYLD3_DEEP_GRAPH_OUT=DIR` keeps the chain in DIR (for measuring
    /// `dyld3 install` and `launch --mode dyld2` on it).
    static func writeRPathChain(depth: Int, in directory: String) throws -> String {
        try FileManager.default.createDirectory(atPath: directory + "/Frameworks", withIntermediateDirectories: true)
        var main = MachOBuilder(fileType: .execute)
        main.dependencies = [(.load, "@rpath/r1.dylib")]
        main.rpaths = ["@executable_path/Frameworks"]
        try main.write(to: directory + "/main")
        for level in 1...depth {
            var dylib = MachOBuilder(fileType: .dylib, installName: "@rpath/r\(level).dylib")
            if level < depth { dylib.dependencies = [(.load, "@rpath/r\(level + 1).dylib")] }
            dylib.rpaths = ["@loader_path/missing\(level)"]
            try dylib.write(to: directory + "/Frameworks/r\(level).dylib")
        }
        return directory + "/main"
    }

    /// The path search probes each path and each rpath directory once per launch: a few
    /// probes per image, where probing every candidate would take depth² / 2.
    @Test func anRPathChainIsSearchedWithProbesLinearInItsImages() throws {
        let kept = ProcessInfo.processInfo.environment["DYLD3_DEEP_GRAPH_OUT"]
        let directory = try kept ?? Scratch.directory("rpath")
        defer { if kept == nil { Scratch.remove(directory) } }
        let main = try Self.writeRPathChain(depth: Self.rpathDepth, in: directory)

        let graph = try DependencyGraph(roots: [main], arch: "arm64", root: nil)
        let images = Self.rpathDepth + 1
        #expect(graph.nodes.map(\.path) == [main] + (1...Self.rpathDepth).map { directory + "/Frameworks/r\($0).dylib" })
        #expect(graph.pathProbes <= 4 * images, "\(graph.pathProbes) probes for \(images) images")
        // Each absent rpath is recorded once for the launch: its first candidate and the directory.
        let absent = graph.nodes.flatMap(\.absentCandidates)
        #expect(absent.count == 2 * (Self.rpathDepth - 1))
        #expect(Set(absent).count == absent.count)
        #expect(absent.contains(directory + "/Frameworks/missing1"))
        #expect(absent.contains(directory + "/Frameworks/missing1/r2.dylib"))
        // What a probe-per-candidate search would have tried, for the record.
        let candidates = (1..<Self.rpathDepth).reduce(0) { $0 + $1 + 1 }
        print("rpath chain: \(images) images, \(graph.pathProbes) probes (every candidate: \(candidates))")

        // The closure built from it agrees, and a file appearing under an absent rpath of a
        // deep image makes it stale.
        let closure = try ClosureBuilder.build(roots: [main], arch: "arm64", root: nil)
        #expect(closure.images.map(\.path) == graph.nodes.map(\.path))
        #expect(closure.images.reduce(0) { $0 + $1.absentPaths.count } == absent.count)
    }
}
