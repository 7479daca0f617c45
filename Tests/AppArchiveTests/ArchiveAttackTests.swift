import AppArchive
import Foundation
import Glibc
import MachOReader
import Synchronization
import Testing
import TestSupport

/// Attacks on the `.ipa` reader and its work area, each on an archive built byte by byte:
/// entry names that would leave the unpack directory (however they are spelled), sizes
/// that claim more than the archive holds, an `Info.plist` that is a link to a huge file,
/// a work area planted or linked by someone else, and concurrent launches of a changed
/// archive.
@Suite(.serialized, .bounded)
struct ArchiveAttackTests {
    /// Writes a zip of `entries` to `path`, with a hole of `hole` bytes (never written, so
    /// sparse) between the entries' data and the central directory.
    static func writeZip(_ entries: [RawEntry], to path: String, hole: Int = 0) throws {
        let (local, tail) = handBuiltZip(entries, hole: hole)
        try Data(local).write(to: URL(fileURLWithPath: path))
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.seek(toOffset: UInt64(local.count + hole))
        try handle.write(contentsOf: Data(tail))
        try handle.close()
    }

    /// Everything under `directory` (files, directories, links), relative, sorted.
    static func everything(under directory: String) -> [String] {
        ((try? FileManager.default.subpathsOfDirectory(atPath: directory)) ?? []).sorted()
    }

    /// Unpacking `archive` into `out` fails with one line naming the archive and holding
    /// `expected`.
    static func expectRefused(_ archive: String, into out: String, _ expected: String, sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            try ZipArchive(path: archive).extract(to: out)
            Issue.record("\(archive): unpacked", sourceLocation: sourceLocation)
        } catch {
            #expect(error.description.hasPrefix(archive + ": ") && error.description.contains(expected), "\(error)", sourceLocation: sourceLocation)
            #expect(!error.description.contains("\n"), "\(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func entryNamesThatLeaveTheUnpackDirectoryAreRefusedAsBytes() throws {
        let directory = try Scratch.directory("names")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let deep = (0..<65).map { _ in "d" }.joined(separator: "/")
        let cases: [(label: String, name: String, expected: String)] = [
            // Swift's Characters glue a combining mark to the `/` beside it; the kernel splits on the byte.
            ("combining", "Payload/d\u{600}/../../../\u{301}e\u{600}/x", "has an empty, . or .. component"),
            ("dot-dot", "Payload/A.app/../../../escape", "has an empty, . or .. component"),
            ("dot", "Payload/./A.app/A", "has an empty, . or .. component"),
            ("empty", "Payload//A", "has an empty, . or .. component"),
            ("absolute", "/tmp/escape", "is an absolute path"),
            ("backslash", "Payload\\..\\..\\escape", "contains a backslash"),
            ("nul", "Payload/A\0/../../escape", "contains a NUL byte"),
            ("deep", deep, "has more than 64 components"),
            ("long", "Payload/" + String(repeating: "a", count: 1020), "has a 1028-byte name, more than the 1024 allowed"),
        ]
        for (label, name, expected) in cases {
            // Unpacked three levels down, so that a `../../..` would land inside `directory`.
            let archive = "\(directory)/\(label).ipa", out = "\(directory)/\(label)/x/y/out"
            try FileManager.default.createDirectory(atPath: "\(directory)/\(label)/x/y", withIntermediateDirectories: true)
            try Self.writeZip([RawEntry("Payload/A.app/A"), RawEntry(name)], to: archive)
            Self.expectRefused(archive, into: out, expected)
            #expect(Self.everything(under: "\(directory)/\(label)") == ["x", "x/y"], "\(label): \(Self.everything(under: "\(directory)/\(label)"))")
        }
        // Nothing but the archives and the empty directories above was created.
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: directory)) == Set(cases.flatMap { [$0.label, $0.label + ".ipa"] }))
        // The byte check itself: what the kernel would split, split the same way.
        #expect(ZipArchive.checkedComponents(Array("Payload/A.app/".utf8)) == .success([Array("Payload".utf8), Array("A.app".utf8)]))
        #expect(ZipArchive.checkedComponents(Array("d\u{600}/..".utf8)) == .failure(.escape))
        #expect(ZipArchive.checkedComponents(Array("..\u{301}/x".utf8)) == .success([Array("..\u{301}".utf8), Array("x".utf8)]))
    }

    /// A name of 32,767 components (the most a zip name's 16-bit length allows) is refused
    /// by its depth, in one pass over its bytes: no quadratic prefix check, no recursion.
    @Test func aNameOf32767ComponentsIsRefused() throws {
        let directory = try Scratch.directory("components")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let name = [String](repeating: "a", count: 32_767).joined(separator: "/")
        #expect(name.utf8.count == 65_533)
        let archive = directory + "/deep.ipa"
        try Self.writeZip([RawEntry(name)], to: archive)
        // Refused while the central directory is read: before anything is unpacked. The
        // name is shown shortened, so the line stays short.
        do {
            _ = try ZipArchive(path: archive)
            Issue.record("read")
        } catch {
            #expect(error.description.contains("more than the 1024 allowed") && error.description.contains("(65533 bytes)"), "\(error)")
            #expect(error.description.utf8.count < 400, "\(error)")
        }
        #expect(ZipArchive.checkedComponents(Array(name.utf8)) == .failure(.tooDeep))
    }

    /// Sizes and offsets the central directory claims are checked against the archive's own
    /// size, and against each other, while the directory is read: nothing is read for an
    /// entry (or allocated) on a claim the file cannot back, whatever the hole it points into.
    @Test func claimedSizesOverTheArchiveAreRefusedBeforeReading() throws {
        let directory = try Scratch.directory("sizes")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let hole = 64 << 20
        let cases: [(label: String, entries: [RawEntry], hole: Int, expected: String)] = [
            // One deflated byte claiming the whole hole as its compressed data.
            ("hole", [RawEntry("a", method: 8, compressed: UInt32(hole), unpacked: 1)], hole,
             "claims \(hole) bytes for 1, which no deflate stream holds"),
            // Twenty one-byte entries whose compressed data is the same stretch of the file.
            ("overlap", (0..<20).map { RawEntry("e\($0)", method: 8, compressed: UInt32(1000)) }, 2000, "overlaps the next entry"),
            ("past-directory", [RawEntry("a", compressed: 1 << 20, unpacked: 1 << 20)], 0, "past the central directory"),
            ("stored-two-sizes", [RawEntry("a", compressed: 1, unpacked: 1 << 20)], 0, "stored entry \"a\" has two sizes"),
            ("ratio", [RawEntry("a", method: 8, compressed: 1, unpacked: 1 << 20)], 0, "claims 1 bytes for 1048576, which no deflate stream holds"),
        ]
        for (label, entries, hole, expected) in cases {
            let archive = "\(directory)/\(label).ipa"
            try Self.writeZip(entries, to: archive, hole: hole)
            #expect {
                _ = try ZipArchive(path: archive)
            } throws: { error in
                "\(error)".hasPrefix(archive + ": ") && "\(error)".contains(expected) && !"\(error)".contains("\n")
            }
        }
        // A central directory that claims more bytes than lie before its end record.
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: directory + "/ratio.ipa")))
        let end = bytes.count - 22
        bytes.replaceSubrange((end + 12)..<(end + 16), with: [0xff, 0xff, 0xff, 0x7f])
        try Data(bytes).write(to: URL(fileURLWithPath: directory + "/directory.ipa"))
        #expect {
            _ = try ZipArchive(path: directory + "/directory.ipa")
        } throws: { error in
            "\(error)".contains("does not fit before its end record")
        }
    }

    /// `Info.plist` opened once without following a link, bounded by `fstat` of what was
    /// opened: a link to a 2 GB sparse file is refused before a byte is read, and so are a
    /// FIFO (which would hang a read) and a sparse file over the limit.
    @Test func infoPlistIsReadWithoutFollowingALink() throws {
        let directory = try Scratch.directory("plist-link")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let app = directory + "/X.app", huge = directory + "/huge"
        try FileManager.default.createDirectory(atPath: app, withIntermediateDirectories: true)
        try Data([0]).write(to: URL(fileURLWithPath: app + "/X"))
        #expect(FileManager.default.createFile(atPath: huge, contents: nil))
        #expect(truncate(huge, 2 << 30) == 0)
        try FileManager.default.createSymbolicLink(atPath: app + "/Info.plist", withDestinationPath: huge)
        #expect {
            try AppBundle.executable(of: app)
        } throws: { error in
            "\(error)".hasPrefix(app + "/Info.plist: ") && "\(error)".contains("is a symbolic link, which is not followed")
        }
        try FileManager.default.removeItem(atPath: app + "/Info.plist")
        #expect(mkfifo(app + "/Info.plist", 0o644) == 0)
        #expect(throws: MachOError.bundle(path: app + "/Info.plist", what: "is not a regular file")) {
            try AppBundle.executable(of: app)
        }
        try FileManager.default.removeItem(atPath: app + "/Info.plist")
        #expect(FileManager.default.createFile(atPath: app + "/Info.plist", contents: nil))
        #expect(truncate(app + "/Info.plist", 2 << 20) == 0)
        #expect(throws: MachOError.bundle(path: app + "/Info.plist", what: "is 2097152 bytes, more than the 1048576 an Info.plist may have")) {
            try AppBundle.executable(of: app)
        }
    }

    /// A `.work` that is a symbolic link is refused, never followed: nothing is written
    /// where it points.
    @Test func aWorkAreaThatIsASymbolicLinkIsRefused() throws {
        let directory = try Scratch.directory("work-link")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let archive = directory + "/A.ipa", cache = directory + "/cache", elsewhere = directory + "/elsewhere"
        try Self.writeZip([RawEntry("Payload/A.app/A")], to: archive)
        try FileManager.default.createDirectory(atPath: cache, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: cache + "/.work", withDestinationPath: elsewhere)
        #expect {
            _ = try AppBundle.unpack(ipa: archive, workArea: cache + "/.work") { _, _ in nil }
        } throws: { error in
            "\(error)" == "\(cache)/.work: the work area is a symbolic link, which is never followed: remove it (it is recreated as a directory)"
        }
        #expect(Self.everything(under: elsewhere).isEmpty)
    }

    /// The CLI holds `.work` to the cache's ownership rules: one that another user owns, or
    /// that group or others can write, is refused with one line naming it, what is wrong and
    /// the fix. (The other-user case needs root to give the directory away.)
    @Test func aWorkAreaAnotherUserCouldPlantIsRefused() async throws {
        let directory = try Scratch.directory("work-owner")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let archive = directory + "/A.ipa", cache = directory + "/cache", work = cache + "/.work"
        try Self.writeZip([RawEntry("Payload/A.app/A")], to: archive)
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        #expect(chmod(work, 0o777) == 0)
        let writable = try await Dyld3Binary.run(["compare", archive, "--cache", cache], limitSeconds: 60)
        #expect(writable.status == 1)
        #expect(writable.stderr.split(separator: "\n").count == 1 && writable.stderr.contains("\(work): the work area is writable by group or others (mode 777)")
            && writable.stderr.contains("chmod 700 it"), "\(writable.stderr)")
        #expect(Self.everything(under: work).isEmpty)
        if geteuid() == 0 {
            #expect(chmod(work, 0o700) == 0 && chown(work, 65534, 65534) == 0)
            let planted = try await Dyld3Binary.run(["compare", archive, "--cache", cache], limitSeconds: 60)
            #expect(planted.status == 1)
            #expect(planted.stderr.split(separator: "\n").count == 1
                && planted.stderr.contains("\(work): the work area is owned by uid 65534, not by you (uid 0) or root"), "\(planted.stderr)")
            #expect(Self.everything(under: work).isEmpty)
        }
        // A fresh work area is created mode 0700 and used.
        try FileManager.default.removeItem(atPath: work)
        let fresh = try await Dyld3Binary.run(["compare", archive, "--cache", cache], limitSeconds: 60)
        #expect(!fresh.stderr.contains(".work:"), "\(fresh.stderr)")
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: work)[.posixPermissions] as? Int)
        #expect(mode & 0o077 == 0, "\(String(mode, radix: 8))")
        #expect(Self.everything(under: work).contains { $0.hasPrefix("ipa-") && $0.hasSuffix("/Payload/A.app/A") })
    }

    /// A changed archive is unpacked into a new tree beside the old, which is left as it
    /// was (a launch may be running from it); the unchanged archive reuses its tree.
    @Test func aChangedArchiveGetsANewTreeAndTheOldOneStays() throws {
        let directory = try Scratch.directory("changed")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let archive = directory + "/A.ipa", work = directory + "/cache/.work"
        try Self.writeZip([RawEntry("Payload/A.app/A", bytes: [1])], to: archive)
        let first = try AppBundle.unpack(ipa: archive, workArea: work) { _, _ in nil }
        #expect(try AppBundle.unpack(ipa: archive, workArea: work) { _, _ in nil } == first)
        try Self.writeZip([RawEntry("Payload/A.app/A", bytes: [2, 2])], to: archive)
        let second = try AppBundle.unpack(ipa: archive, workArea: work) { _, _ in nil }
        #expect(second != first)
        #expect(FileManager.default.contents(atPath: first + "/A") == Data([1]))
        #expect(FileManager.default.contents(atPath: second + "/A") == Data([2, 2]))
        // Two trees of one archive (one prefix), each with its stamp, and no unpack left over.
        let names = try FileManager.default.contentsOfDirectory(atPath: work).sorted()
        #expect(names.count == 4 && names.allSatisfy { $0.hasPrefix("ipa-") }, "\(names)")
        #expect(Set(names.map { $0.split(separator: "-")[1] }).count == 1, "\(names)")
    }

    /// Concurrent unpacks of an archive that keeps changing all succeed: each round's
    /// unpackers race to publish one tree, the losers use the winner's, and every one
    /// returns the same tree holding that round's bytes.
    @Test func concurrentUnpacksOfAChangedArchiveAllSucceed() throws {
        let directory = try Scratch.directory("concurrent")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let archive = directory + "/A.ipa", work = directory + "/cache/.work"
        for round in 1...4 {
            // Fifty files, so that the unpacks overlap and race to publish.
            try Self.writeZip([RawEntry("Payload/A.app/A", bytes: [UInt8](repeating: UInt8(round), count: round * 1000))]
                + (0..<50).map { RawEntry("Payload/A.app/Resources/r\($0)", bytes: [UInt8](repeating: UInt8($0), count: 4096)) }, to: archive)
            let results = Mutex<[Result<String, MachOError>]>([])
            DispatchQueue.concurrentPerform(iterations: 8) { _ in
                let result = Result { () throws(MachOError) -> String in try AppBundle.unpack(ipa: archive, workArea: work) { _, _ in nil } }
                results.withLock { $0.append(result) }
            }
            let paths = try results.withLock { results in try results.map { try $0.get() } }
            #expect(paths.count == 8 && Set(paths).count == 1, "round \(round): \(paths)")
            #expect(FileManager.default.contents(atPath: paths[0] + "/A") == Data(repeating: UInt8(round), count: round * 1000))
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: work)
        #expect(names.count == 8 && !names.contains { $0.hasPrefix(".") }, "\(names.sorted())")
    }
}
