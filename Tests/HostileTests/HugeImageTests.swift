import Foundation
@testable import ClosureCache
import LoaderCore
import TestSupport
import Testing
import LaunchPlan
@testable import ClosureFormat
import LoaderSystem

/// An image padded to 4 GB (sparse): hashing it for its identity streams it through one
/// bounded buffer, skipping its holes, so `install` and `launch --hash-images` stay in
/// bounded memory (peak RSS of the child, measured by `PeakMemory`).
@Suite(.serialized, .bounded) struct HugeImageTests {
    static let bound = 100 << 20

    @Test func aFourGigabyteSparseDependencyInstallsAndLaunchesInBoundedMemory() async throws {
        let app = try FixtureApp.named("basic").scratchCopy()
        defer { try? FileManager.default.removeItem(at: app.directory) }
        let cache = try Scratch.directory("huge-image")
        defer { Scratch.remove(cache) }
        let dylib = try #require(try app.closure().images.first { $0.path.hasSuffix("/Util") }?.path)
        #expect(truncate(dylib, 4 << 30) == 0)
        let dyld3 = try Dyld3Binary.path()
        let install = try await PeakMemory.run(dyld3, ["install", app.bundle, "--root", app.root, "--cache", cache])
        #expect(install.status == 0, "\(install.stderr)")
        #expect(install.peakResidentBytes < Self.bound, "install: peak RSS \(install.peakResidentBytes >> 20) MB")
        let launch = try await PeakMemory.run(dyld3, ["launch", app.bundle, "--root", app.root, "--cache", cache, "--mode", "dyld3", "--hash-images"])
        #expect(launch.status == 0, "\(launch.stderr)")
        #expect(launch.peakResidentBytes < Self.bound, "launch --hash-images: peak RSS \(launch.peakResidentBytes >> 20) MB")
        // The streamed hash is the hash of the whole file.
        let path = ClosureCache(directory: cache).closurePath(forApp: app.executable, arch: app.arch)
        let recorded = try #require(try ClosureFile.read(path).images.first { $0.path == dylib }).identity
        #expect(recorded.size == 4 << 30)
        var hashed = false
        let file = try ImageDescriptor.open(dylib)
        #expect(recorded.check(file, contentOnly: true, racy: false, checks: IdentityChecks(alwaysHash: true), hashed: &hashed) == nil)
        #expect(hashed)
    }

    /// The streamed hash, and the hash of the file as mapped, equal xxh3 of the bytes in one
    /// piece, for files with data, holes, and sizes around the buffer's.
    @Test func theStreamedHashIsTheHashOfTheWholeFile() throws {
        let directory = try Scratch.directory("stream-hash")
        defer { Scratch.remove(directory) }
        let chunk = ImageDescriptor.hashChunkSize
        let shapes: [(String, [(offset: Int, bytes: Int)], Int)] = [
            ("empty", [], 0), ("small", [(0, 100)], 100), ("one chunk", [(0, chunk)], chunk),
            ("chunk and one", [(0, chunk + 1)], chunk + 1), ("hole in the middle", [(0, 5000), (3 * chunk, 7000)], 3 * chunk + 7000),
            ("trailing hole", [(0, 4096)], 2 * chunk + 17), ("leading hole", [(2 * chunk, 4096)], 2 * chunk + 4096),
        ]
        for (name, pieces, size) in shapes {
            var bytes = [UInt8](repeating: 0, count: size)
            var generator = SystemRandomNumberGenerator()
            for piece in pieces { for index in piece.offset..<(piece.offset + piece.bytes) { bytes[index] = UInt8.random(in: 1...255, using: &generator) } }
            let path = directory + "/" + name.replacingOccurrences(of: " ", with: "-")
            #expect(FileManager.default.createFile(atPath: path, contents: nil))
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
            for piece in pieces {
                try handle.seek(toOffset: UInt64(piece.offset))
                try handle.write(contentsOf: Data(bytes[piece.offset..<(piece.offset + piece.bytes)]))
            }
            try handle.truncate(atOffset: UInt64(size))
            try handle.close()
            let file = try ImageDescriptor.open(path)
            #expect(file.contentHash() == UnsafeHash.xxh3(bytes), "\(name)")
            // And hashed where the file is mapped (an identity taken from the bytes parsed).
            #expect(ImageDescriptor.contentHash(ofMapped: try ImageFile.mapRegularFile(path)) == UnsafeHash.xxh3(bytes), "\(name), mapped")
        }
    }
}
