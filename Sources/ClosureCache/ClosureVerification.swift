import Foundation
import LoaderCore
import LaunchPlan
import ClosureFormat
import LoaderSystem
import MachOReader

/// The verdict on one file of the closure cache, as `dyld3 verify` reports it: whether it
/// is a closure, whether it reads, whether it is consistent, and whether its images are
/// still the ones on disk.
package struct ClosureVerification: Sendable {
    /// The verdict: a `valid` closure can be launched and a `stale` one rebuilt; every other
    /// status means the file is unusable.
    package enum Status: String, Sendable, CaseIterable {
        case valid, corrupt, stale, incompatible
        case notAClosure = "not-a-closure"
        case untrusted
        /// The closure's mapping plan disagrees with an image's own load commands.
        case invalid
        /// The closure is bound to another app or architecture than its file name says
        /// (another app's closure copied under this name).
        case misplaced
    }

    /// One thing wrong with the file, and which status it calls for (never `valid`).
    package struct Problem: Equatable, Sendable, CustomStringConvertible {
        package let kind: Status
        package let message: String
        package var description: String { "\(kind.rawValue): \(message)" }
    }

    package let path: String
    package let status: Status
    package let problems: [Problem]

    /// Checks the file at `path`: extension and magic, ownership, header, checksum, frame,
    /// structure and header flags, consistency (`consistencyProblems()`), then every image's
    /// identity against the disk (`staleImages()`).
    package init(checking path: String, trusting trustKey: ClosureTrustKey? = nil, alwaysHash: Bool = false) {
        self.path = path
        (status, problems) = Self.verdict(path, trusting: trustKey, alwaysHash: alwaysHash)
    }

    /// A status and the problems that call for it.
    typealias Verdict = (status: Status, problems: [Problem])

    /// The verdict of one problem: its kind.
    static func failed(_ problem: Problem) -> Verdict { (problem.kind, [problem]) }
    static func failed(_ kind: Status, _ message: String) -> Verdict { failed(Problem(kind: kind, message: message)) }
    static let vanished = "vanished while it was being verified"

    static func verdict(_ path: String, trusting trustKey: ClosureTrustKey?, alwaysHash: Bool) -> Verdict {
        guard let entry = FileStatus.of(path) else { return failed(.corrupt, vanished) }
        guard !entry.isDirectory else { return failed(.notAClosure, "is a directory") }
        if path.hasSuffix("." + ClosureCache.prelinkedSetExtension) {
            return verifyPrelinkedSet(path, trusting: trustKey, alwaysHash: alwaysHash)
        }
        if path.hasSuffix("." + ClosureCache.slidSetExtension) { return verifySlidSet(path) }
        if path.hasSuffix("." + ClosureCache.slidCacheExtension) { return verifySlidCache(path) }
        guard path.hasSuffix("." + ClosureCache.fileExtension) else {
            return failed(.notAClosure, "has no .\(ClosureCache.fileExtension) extension")
        }
        let file: UnsafeFileIO.OpenFile
        switch UnsafeFileIO.openNoFollow(path) {
        case let .success(opened): file = opened
        case .failure(.missing): return failed(.corrupt, vanished)
        case let .failure(error):
            let reason = if case let .untrusted(_, what) = error { what } else { "\(error)" }
            return failed(.untrusted, reason)
        }
        guard file.status.size <= UInt64(ClosureFile.maxFileSize) else {
            return failed(.corrupt, "\(file.status.size) bytes is over the \(ClosureFile.maxFileSize)-byte limit for a closure file")
        }
        guard let bytes = file.readAll() else { return failed(.untrusted, "cannot be read") }
        let magicLength = min(bytes.count, ClosureFileHeader.magic.count)
        guard bytes[0..<magicLength].elementsEqual(ClosureFileHeader.magic[0..<magicLength]) else {
            return failed(.notAClosure, "bad magic (a closure starts with DYLD3CL)")
        }
        let closure: LaunchClosure
        do throws(ClosureError) {
            try ClosureFile.checkOwnership(path, file.status)
            closure = try ClosureFile.decode(bytes, path: path, trusting: trustKey)
            try closure.checkRoots(closurePath: path)
        } catch {
            return failed(problem(for: error))
        }
        var inconsistencies = closure.consistencyProblems().map { Problem(kind: .corrupt, message: $0) }
        // Each dlopen closure, decoded and checked against the launch's; its own images (those
        // after the launch's, which are checked below) are checked with them.
        var opened: [LaunchClosure] = []
        for record in closure.dlopens {
            do throws(ClosureError) {
                let nested = try record.closure(within: closure, path: path)
                inconsistencies += nested.consistencyProblems().map { Problem(kind: .corrupt, message: "dlopen closure for \(record.requested): \($0)") }
                var added = nested
                added.images.removeFirst(closure.images.count)
                opened.append(added)
            } catch {
                inconsistencies.append(Problem(kind: .corrupt, message: "\(error)"))
            }
        }
        guard inconsistencies.isEmpty else { return (.corrupt, inconsistencies) }
        var staleImages = closure.staleImages(closurePath: path, alwaysHash: alwaysHash)
        for added in opened { staleImages += added.staleImages(closurePath: path, alwaysHash: alwaysHash) }
        let stale = staleImages.map { Problem(kind: .stale, message: "\($0.image) \($0.what)") }
        let changed = Set(staleImages.map(\.image))
        var invalid = ClosureVerification.planProblems(closure, skipping: changed)
        for added in opened { invalid += ClosureVerification.planProblems(added, skipping: changed) }
        let misplaced = ClosureVerification.placementProblems(closure, path: path)
        let status: Status = !invalid.isEmpty ? .invalid : !misplaced.isEmpty ? .misplaced : !stale.isEmpty ? .stale : .valid
        return (status, invalid + misplaced + stale)
    }

    /// Each image's plan against the header and load commands in its file, as a launch reads
    /// them, but for images in `stale` (changed since install).
    static func planProblems(_ closure: LaunchClosure, skipping stale: Set<String>) -> [Problem] {
        closure.images.compactMap { image in
            guard !stale.contains(image.path), let file = try? ImageDescriptor.open(image.path) else { return nil }
            return image.planDisagreement(arch: closure.arch, file: file).map { Problem(kind: .invalid, message: "\(image.path): \($0)") }
        }
    }

    /// The file name says which app and architecture the closure is for (`name`: the file's
    /// path beside that closure's): its binding must agree.
    static func placementProblems(_ closure: LaunchClosure, path: String, name: (String) -> String = { $0 }) -> [Problem] {
        let cache = ClosureCache(directory: PathResolver.containingDirectory(of: path))
        let expected = name(cache.closurePath(forApp: closure.binding.app, arch: closure.arch))
        guard expected.split(separator: "/").last != path.split(separator: "/").last else { return [] }
        return [Problem(kind: .misplaced, message: "built for \(closure.binding.app) (\(closure.arch)), which the cache names \(expected.split(separator: "/").last ?? "")")]
    }

    /// Whether the file cannot be used at all (as opposed to valid, or stale and rebuildable).
    package var isUnusable: Bool { status != .valid && status != .stale }

    /// Every file in `cache`, sorted by path.
    package static func verify(_ cache: ClosureCache, trusting trustKey: ClosureTrustKey? = nil, alwaysHash: Bool = false) -> [ClosureVerification] {
        cache.files().map { ClosureVerification(checking: $0, trusting: trustKey, alwaysHash: alwaysHash) }
    }

    /// The problem `error` is, its kind the status it calls for.
    static func problem(for error: ClosureError) -> Problem {
        switch error {
        case let .corrupt(_, offset, what): Problem(kind: .corrupt, message: "\(what) (offset \(hex(UInt64(max(0, offset)))))")
        case let .incompatible(_, what): Problem(kind: .incompatible, message: what)
        case let .untrusted(_, what): Problem(kind: .untrusted, message: what)
        case let .stale(_, image, what): Problem(kind: .stale, message: "\(image) \(what)")
        case .missing, .noSlidCopy: Problem(kind: .corrupt, message: vanished)
        case let .writeFailed(_, what): Problem(kind: .corrupt, message: what)
        case let .systemCallFailed(_, failure): Problem(kind: .corrupt, message: "\(failure)")
        case .mismatch: Problem(kind: .misplaced, message: "\(error)")
        case let .plan(_, image, disagreement): Problem(kind: .invalid, message: "\(image): \(disagreement)")
        case let .fixups(_, image, stream, fault): Problem(kind: .invalid, message: "\(image ?? "?"): \(stream.rawValue): \(fault)")
        case let .mapping(_, image, what): Problem(kind: .invalid, message: "\(image): its plan cannot be mapped: \(what)")
        }
    }
}

