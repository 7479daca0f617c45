import Foundation
import LoaderCore

extension LaunchClosure {
    /// How many bad fixups of one image are listed before the rest are only counted.
    static let fixupProblemLimit = 8

    /// What is wrong inside a closure that `ClosureFile.read` accepted: the reader checks
    /// each field as it decodes; this checks how the fields fit together. Every fixup lies
    /// 8 bytes inside a writable segment of its image, every rebase points into its image,
    /// every image index is in range, no two segments of an image overlap, every missing
    /// dependency is a weak one that is listed, the Objective-C part fits (``objcProblems()``). Empty for any closure the builder wrote.
    public func consistencyProblems() -> [String] {
        var problems: [String] = []
        if rootCount < 1 || rootCount > images.count {
            problems.append("root count \(rootCount) with \(images.count) images")
        }
        problems += initializerOrderProblems()
        for (index, target) in bindTargets.enumerated() {
            if case let .image(image, offset) = target, !images.indices.contains(image) || offset >= images[image].plan.vmSize {
                problems.append("bind target #\(index) (image \(image), offset \(hex(offset))) is outside every image")
            }
        }
        for index in images.indices {
            problems += segmentProblems(images[index])
            problems += dependencyProblems(images[index])
            problems += fixupProblems(index)
            problems += pageIndexProblems(images[index])
            for offset in images[index].initializers where !images[index].plan.isExecutable(offset) {
                problems.append("\(images[index].path): initializer at \(hex(offset)) is not in an executable segment")
            }
        }
        if let entry = entryOffset, rootCount >= 1, rootCount <= images.count,
           !images[rootCount - 1].plan.isExecutable(entry) {
            problems.append("entry point \(hex(entry)) is not in an executable segment of \(images[rootCount - 1].path)")
        }
        problems += objcProblems()
        return problems
    }

    private func initializerOrderProblems() -> [String] {
        var problems: [String] = []
        var seen = Set<Int>()
        for index in initializerOrder {
            if !images.indices.contains(index) {
                problems.append("initializer order names image \(index) of \(images.count)")
            } else if !seen.insert(index).inserted {
                problems.append("initializer order names \(images[index].path) twice")
            }
        }
        for index in images.indices where !images[index].initializers.isEmpty && !seen.contains(index) {
            problems.append("\(images[index].path) has initializers but is not in the initializer order")
        }
        return problems
    }

    private func segmentProblems(_ image: ClosureImage) -> [String] {
        var problems: [String] = []
        let segments = image.plan.segments
        for (position, segment) in segments.enumerated() {
            let (end, overflow) = segment.vmOffset.addingReportingOverflow(segment.vmSize)
            if overflow || end > image.plan.vmSize {
                problems.append("\(image.path): segment \(segment.name) ends past the image's \(hex(image.plan.vmSize)) bytes")
            }
            if segment.fileSize > segment.vmSize {
                problems.append("\(image.path): segment \(segment.name) maps more file bytes than its size")
            }
            for other in segments[(position + 1)...] where segment.overlaps(other) {
                problems.append("\(image.path): segments \(segment.name) and \(other.name) overlap")
            }
        }
        return problems
    }

    private func dependencyProblems(_ image: ClosureImage) -> [String] {
        var problems: [String] = []
        for dependency in image.dependencies {
            if dependency.target == -1 {
                if dependency.kind != .weak {
                    problems.append("\(image.path): \(dependency.kind.rawValue) dependency \(dependency.installName) is missing")
                } else if !missingWeakDylibs.contains(where: { $0.installName == dependency.installName }) {
                    problems.append("\(image.path): missing weak dependency \(dependency.installName) is not listed as missing")
                }
            } else if !images.indices.contains(dependency.target) {
                problems.append("\(image.path): dependency \(dependency.installName) names image \(dependency.target) of \(images.count)")
            }
        }
        return problems
    }

    /// The page index must be exactly the one the runs call for (``FixupPageIndex/derive``):
    /// a page missing from it would never get its fixups in a page-in launch.
    private func pageIndexProblems(_ image: ClosureImage) -> [String] {
        do {
            let derived = try FixupPageIndex.derive(rebaseRuns: image.rebaseRuns, bindRuns: image.bindRuns)
            guard derived != image.fixupPageIndex else { return [] }
            let stored = try image.fixupPageIndex.pages(path: image.path), expected = try derived.pages(path: image.path)
            if stored.pageSize != expected.pageSize {
                return ["\(image.path): fixup page index has page size \(stored.pageSize), its runs call for \(expected.pageSize)"]
            }
            let first = zip(stored.pages, expected.pages).first { $0 != $1 }
            let page = first.map { hex($0.1.page * expected.pageSize) } ?? "\(min(stored.pages.count, expected.pages.count))th page"
            return ["\(image.path): fixup page index disagrees with its runs at \(page) "
                + "(\(stored.pages.count) pages indexed, the runs call for \(expected.pages.count))"]
        } catch {
            return ["\(image.path): fixup page index does not decode: \(error)"]
        }
    }

    private func fixupProblems(_ index: Int) -> [String] {
        let image = images[index]
        let fixups: [ResolvedFixup]
        do {
            fixups = try self.fixups(ofImage: index)
        } catch {
            return ["\(image.path): fixup runs do not decode: \(error)"]
        }
        var problems: [String] = []
        let rebases = fixups.count(where: { if case .rebase = $0.kind { true } else { false } })
        if rebases != image.rebaseCount || fixups.count - rebases != image.bindCount {
            problems.append("\(image.path): runs hold \(rebases) rebases and \(fixups.count - rebases) binds, "
                + "the counts say \(image.rebaseCount) and \(image.bindCount)")
        }
        let writable = image.plan.segments.filter(\.isWritable)
        var bad: [String] = []
        var badCount = 0
        for fixup in fixups {
            var problem: String?
            if !writable.contains(where: { fixup.vmOffset >= $0.vmOffset && $0.vmSize >= 8 && fixup.vmOffset - $0.vmOffset <= $0.vmSize - 8 }) {
                problem = "fixup at \(hex(fixup.vmOffset)) is not 8 bytes inside a writable segment"
            } else if case let .rebase(target, _) = fixup.kind, target >= image.plan.vmSize {
                problem = "rebase at \(hex(fixup.vmOffset)) points to \(hex(target)), outside the image"
            }
            guard let problem else { continue }
            badCount += 1
            if bad.count < LaunchClosure.fixupProblemLimit { bad.append("\(image.path): \(problem)") }
        }
        if badCount > bad.count { bad.append("\(image.path): \(badCount - bad.count) more bad fixups") }
        return problems + bad
    }
}

/// The verdict on one file of the closure cache, as `dyld3 verify` reports it: whether it
/// is a closure, whether it reads, whether it is consistent, and whether its images are
/// still the ones on disk.
public struct ClosureVerification: Sendable {
    /// The verdict: a `valid` closure can be launched and a `stale` one rebuilt; every other
    /// status means the file is unusable.
    public enum Status: String, Sendable, CaseIterable {
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
    public struct Problem: Equatable, Sendable, CustomStringConvertible {
        public let kind: Status
        public let message: String
        public var description: String { "\(kind.rawValue): \(message)" }
    }

    public let path: String
    public let status: Status
    public let problems: [Problem]

    /// Checks the file at `path`: extension and magic, ownership, header, checksum, frame and
    /// structure and header flags (`ClosureFile`), consistency (`consistencyProblems()`), then every image's identity against the disk (`staleImages()`).
    public init(checking path: String, trusting trustKey: ClosureTrustKey? = nil, alwaysHash: Bool = false) {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            self.init(path, .corrupt, [Problem(kind: .corrupt, message: "vanished while it was being verified")])
            return
        }
        guard !isDirectory.boolValue else {
            self.init(path, .notAClosure, [Problem(kind: .notAClosure, message: "is a directory")])
            return
        }
        guard path.hasSuffix("." + ClosureCache.fileExtension) else {
            self.init(path, .notAClosure, [Problem(kind: .notAClosure, message: "has no .\(ClosureCache.fileExtension) extension")])
            return
        }
        let file: UnsafeFileIO.OpenFile
        switch UnsafeFileIO.openNoFollow(path) {
        case let .success(opened): file = opened
        case .failure(.missing):
            self.init(path, .corrupt, [Problem(kind: .corrupt, message: "vanished while it was being verified")])
            return
        case let .failure(.refused(reason)):
            self.init(path, .untrusted, [Problem(kind: .untrusted, message: reason)])
            return
        }
        guard file.status.size <= UInt64(ClosureFile.maxFileSize) else {
            self.init(path, .corrupt, [Problem(kind: .corrupt, message: "\(file.status.size) bytes is over the \(ClosureFile.maxFileSize)-byte limit for a closure file")])
            return
        }
        guard let bytes = file.readAll() else {
            self.init(path, .untrusted, [Problem(kind: .untrusted, message: "cannot be read")])
            return
        }
        let magicLength = min(bytes.count, ClosureFileHeader.magic.count)
        guard bytes[0..<magicLength].elementsEqual(ClosureFileHeader.magic[0..<magicLength]) else {
            self.init(path, .notAClosure, [Problem(kind: .notAClosure, message: "bad magic (a closure starts with DYLD3CL)")])
            return
        }
        let closure: LaunchClosure
        do throws(ClosureError) {
            try ClosureFile.checkOwnership(path, file.status)
            closure = try ClosureFile.decode(bytes, path: path, trusting: trustKey)
        } catch {
            self.init(path, ClosureVerification.problem(for: error))
            return
        }
        let inconsistencies = closure.consistencyProblems().map { Problem(kind: .corrupt, message: $0) }
        guard inconsistencies.isEmpty else {
            self.init(path, .corrupt, inconsistencies)
            return
        }
        let staleImages = closure.staleImages(closurePath: path, alwaysHash: alwaysHash)
        let stale = staleImages.map { Problem(kind: .stale, message: "\($0.image) \($0.what)") }
        let invalid = ClosureVerification.planProblems(closure, skipping: Set(staleImages.map(\.image)))
        let misplaced = ClosureVerification.placementProblems(closure, path: path)
        let status: Status = !invalid.isEmpty ? .invalid : !misplaced.isEmpty ? .misplaced : !stale.isEmpty ? .stale : .valid
        self.init(path, status, invalid + misplaced + stale)
    }

    /// Each image's plan against the header and load commands in its file (read at the
    /// plan's own file offsets, as a launch reads them). Images in
    /// `stale` changed since install: their plans are not checked.
    static func planProblems(_ closure: LaunchClosure, skipping stale: Set<String>) -> [Problem] {
        closure.images.compactMap { image in
            guard !stale.contains(image.path), case let .success(file) = ImageDescriptor.open(image.path) else { return nil }
            return image.planDisagreement(arch: closure.arch, file: file).map { Problem(kind: .invalid, message: "\(image.path): \($0)") }
        }
    }

    /// The file name says which app and architecture the closure is for: its binding must agree.
    static func placementProblems(_ closure: LaunchClosure, path: String) -> [Problem] {
        let directory = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        let expected = ClosureCache(directory: directory.isEmpty ? "." : directory).closurePath(forApp: closure.binding.app, arch: closure.arch)
        guard expected.split(separator: "/").last != path.split(separator: "/").last else { return [] }
        return [Problem(kind: .misplaced, message: "built for \(closure.binding.app) (\(closure.arch)), which the cache names \(expected.split(separator: "/").last ?? "")")]
    }

    private init(_ path: String, _ status: Status, _ problems: [Problem]) {
        self.path = path
        self.status = status
        self.problems = problems
    }

    private init(_ path: String, _ verdict: (Status, Problem)) {
        self.init(path, verdict.0, [verdict.1])
    }

    /// Whether the file cannot be used at all (as opposed to valid, or stale and rebuildable).
    public var isUnusable: Bool { status != .valid && status != .stale }

    /// Every file in `cache`, sorted by path.
    public static func verify(_ cache: ClosureCache, trusting trustKey: ClosureTrustKey? = nil, alwaysHash: Bool = false) -> [ClosureVerification] {
        cache.files().map { ClosureVerification(checking: $0, trusting: trustKey, alwaysHash: alwaysHash) }
    }

    static func problem(for error: ClosureError) -> (Status, Problem) {
        switch error {
        case let .corrupt(_, offset, what):
            (.corrupt, Problem(kind: .corrupt, message: "\(what) (offset \(hex(UInt64(max(0, offset)))))"))
        case let .incompatible(_, what):
            (.incompatible, Problem(kind: .incompatible, message: what))
        case let .untrusted(_, what):
            (.untrusted, Problem(kind: .untrusted, message: what))
        case let .stale(_, image, what):
            (.stale, Problem(kind: .stale, message: "\(image) \(what)"))
        case .missing:
            (.corrupt, Problem(kind: .corrupt, message: "vanished while it was being verified"))
        case let .writeFailed(_, what):
            (.corrupt, Problem(kind: .corrupt, message: what))
        case let .systemCallFailed(_, failure):
            (.corrupt, Problem(kind: .corrupt, message: "\(failure)"))
        case .mismatch:
            (.misplaced, Problem(kind: .misplaced, message: "\(error)"))
        case let .invalid(_, image, what):
            (.invalid, Problem(kind: .invalid, message: "\(image): \(what)"))
        case let .plan(_, image, disagreement):
            (.invalid, Problem(kind: .invalid, message: "\(image): \(disagreement)"))
        case let .fixups(_, image, stream, fault):
            (.invalid, Problem(kind: .invalid, message: "\(image): \(stream.rawValue): \(fault)"))
        }
    }
}

/// `0x` and lowercase hex digits.
func hex(_ value: UInt64) -> String { "0x" + String(value, radix: 16) }
