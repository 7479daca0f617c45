import ClosureCache
import Foundation
import LoaderCore
import MachOReader
import ClosureFormat
import LaunchPlan
import LoaderSystem
import LaunchMemory
import RuntimeServices

/// `dlopen` in a dyld3 launch, with dlopen closures: the launch closure's prebuilt one for the
/// path (`dyld3 install APP --dlopen PATH`) when nothing was `dlopen`ed before, else one built
/// now by ``LaunchConfiguration/dlopenClosures`` (as dyld3 built one in process), else the
/// call fails and `dlerror` says how to install one. Applying one is the fast path's work:
/// the added images identified, checked against their headers, mapped at one reservation,
/// fixed up from the runs, protected, then initialized in the recorded order.
///
/// `dlsym` walks the export tries of the images its handle searches (as dyld4's does, see
/// ``DynamicLoader``); each image is parsed once, on its first lookup.
final class ClosureDynamicLoader: DynamicLoader {
    private let launch: LaunchClosure
    private let closurePath: String
    private let request: LaunchOptions
    private let configuration: LaunchConfiguration
    private let launchMemory: LaunchMemory
    /// The launch's images, then those `dlopen`s added, in load order.
    private var images: [ClosureImage]
    /// Per image (in ``images``' order) where it is mapped, its opens and whether it is hidden.
    var book: DynamicLoadBook
    /// The requested path of each `dlopen` that added images, in order.
    private var earlier: [String] = []
    /// What `dlsym` and `dladdr` read of an image, made on their first call, not at launch.
    private struct Parsed {
        var image: MachOImage?
        /// Its export trie once read (nil: not read yet; `.some(nil)`: it has none).
        var trie: ExportTrie??
    }
    private var parsed: [Parsed] = []

    /// Image `index`'s ``Parsed``, every image's made first.
    private func parsedState(_ index: Int) -> Parsed {
        if parsed.count < images.count { parsed += [Parsed](repeating: Parsed(), count: images.count - parsed.count) }
        return parsed[index]
    }

    /// How `dlopen` paths name files: made on the first `dlopen`, not at launch.
    private lazy var resolver = PathResolver(root: request.root, executablePath: launch.images[0].path)
    var nextSlide: UInt64?
    /// dlopen closures built at run time against the launch's images alone (the first
    /// `dlopen`s): what the launch closure can keep for the next launch (``DlopenClosureKeeping``),
    /// encoded only then.
    private(set) var builtForLaunch: [KeptDlopen] = []

    /// A dlopen closure built at run time for a path, as built (``DlopenResolution``).
    struct KeptDlopen {
        let requested: String
        let closure: DlopenResolution
    }
    /// What the dlopen closure builder kept from its last build (``BuiltDlopen/builderState``).
    private var builderState: (any Sendable)?

    /// `dlopen` of an image already loaded: one more open of it, nothing added.
    private func reopen(_ index: Int, requested path: String, mode: DynamicOpenMode) -> UInt64 {
        book.reopen(index, mode: mode)
        book.record(DynamicLoadEvent(requested: path, loaded: [], initialized: [], via: "closure"))
        return DynamicHandle.image(book.base(of: index), firstOnly: mode.contains(.first))
    }

    init(launch: LaunchClosure, closurePath: String, request: LaunchOptions, configuration: LaunchConfiguration, memory: LaunchMemory) {
        self.launch = launch
        self.closurePath = closurePath
        self.request = request
        self.configuration = configuration
        launchMemory = memory
        images = launch.images
        book = DynamicLoadBook(launch: memory)
    }

    /// The loaded image `path` names: by install name, else by the file it names: directly, or
    /// for `@rpath/` the first candidate over the main executable's rpaths that exists (one
    /// that exists but is not loaded is another file: nil). With `failingWhenMissing`, a path
    /// that names no file at all fails as the slow path's `dlopen` does, before any closure is built.
    private func loadedImage(_ path: String, failingWhenMissing: Bool) throws(LoadError) -> Int? {
        let direct = resolver.direct(path)
        if let named = loadedImage(named: path, direct: direct) { return named }
        let files = path.hasPrefix("@rpath/") ? candidates(path) : direct.map { [$0] } ?? []
        for file in files {
            if let index = images.indices.first(where: { images[$0].path == file }) { return index }
            if FileStatus.of(file) != nil { return nil }
        }
        if failingWhenMissing, path.hasPrefix("/") || path.hasPrefix("@") {
            let tried = candidates(path)
            if !tried.contains(where: { !files.contains($0) && FileStatus.of($0) != nil }) {
                throw .missingDylib(installName: path, neededBy: "dlopen", tried: tried)
            }
        }
        return nil
    }

    /// The loaded image `path` names by install name, or for a direct path by the file it
    /// names (`direct`: ``PathResolver/direct(_:)`` of `path`, nil for `@rpath/`).
    private func loadedImage(named path: String, direct: String?) -> Int? {
        if let index = images.indices.first(where: { images[$0].installName == path }) { return index }
        guard let direct else { return nil }
        return images.indices.first { images[$0].path == direct }
    }

    /// The files `path` may name, as the slow path tries them for a `dlopen`: from the main
    /// executable's directory and over its rpaths (the closure's record of them: nothing parsed).
    private func candidates(_ path: String) -> [String] {
        let directory = PathResolver.directory(of: images[0].path)
        let rpaths = images[0].rpaths.map { PathResolver.RPath(path: $0, declaringImageDirectory: directory) }
        return resolver.candidates(for: path, loaderDirectory: directory, rpaths: rpaths)
    }

    func open(_ path: String, mode rawMode: Int32) throws(LoadError) -> UInt64 {
        let mode = DynamicOpenMode(rawValue: rawMode)
        let direct = resolver.direct(path)
        let named = loadedImage(named: path, direct: direct)
        // The launch closure's own, while nothing was opened before it: its images are opened
        // and checked as they are mapped, so the path is not looked up on disk first (only
        // when the closure does not hold, to fail as the slow path does for a missing file).
        if named == nil, !mode.contains(.noLoad), images.count == launch.images.count,
           let prebuilt = launch.dlopens.first(where: { $0.requested == path || (direct != nil && $0.resolvedPath == direct) }) {
            do throws(LoadError) {
                return try apply(prebuilt, requested: path, mode: mode, via: "closure")
            } catch {
                // Nothing added: a path that names a loaded image, or no file, is answered as before.
                if images.count == launch.images.count, let index = try loadedImage(path, failingWhenMissing: true) {
                    return reopen(index, requested: path, mode: mode)
                }
                // One that does not hold (an image changed since install): build one now when that is possible.
                guard configuration.dlopenClosures != nil else { throw error }
            }
        } else {
            if let index = named { return reopen(index, requested: path, mode: mode) }
            if let index = try loadedImage(path, failingWhenMissing: !mode.contains(.noLoad)) { return reopen(index, requested: path, mode: mode) }
            if mode.contains(.noLoad) { throw .unusable(path: path, reason: "is not loaded (RTLD_NOLOAD loads nothing)") }
        }
        guard let build = configuration.dlopenClosures else {
            throw .unusable(path: path, reason: "has no dlopen closure in \(closurePath): run `dyld3 install` with `--dlopen \(path)`")
        }
        switch try build(path, request, launch, images, mappedSlice, earlier, builderState) {
        case var .built(built):
            var closure = launch
            closure.images = built.images
            closure.initializerOrder = built.initializerOrder
            let handle = try apply(closure, added: built.firstAdded..<built.images.count, opened: built.opened, requested: path, mode: mode,
                                   via: "runtime closure", fixups: .resolved(built.fixups))
            builderState = built.builderState
            built.builderState = nil
            if built.firstAdded == launch.images.count, !builtForLaunch.contains(where: { $0.requested == built.requested }) {
                builtForLaunch.append(KeptDlopen(requested: built.requested, closure: .built(built)))
            }
            return handle
        case let .closure(record):
            let launchOnly = images.count == launch.images.count
            let handle = try apply(record, requested: path, mode: mode, via: "runtime closure")
            if launchOnly, !builtForLaunch.contains(where: { $0.requested == record.requested }) { builtForLaunch.append(KeptDlopen(requested: record.requested, closure: .closure(record))) }
            return handle
        case let .loaded(loadedPath):  // under another name
            guard let index = images.firstIndex(where: { $0.path == loadedPath }) else {
                throw .unusable(path: path, reason: "names \(loadedPath), which the launch did not load")
            }
            return reopen(index, requested: path, mode: mode)
        }
    }

    /// Decodes `record` against the images loaded so far and applies it.
    private func apply(_ record: ClosureDlopen, requested: String, mode: DynamicOpenMode, via: String) throws(LoadError) -> UInt64 {
        let closure: LaunchClosure
        do throws(ClosureError) {
            var within = launch
            within.images = images
            closure = try record.closure(within: within, path: closurePath)
        } catch {
            throw .failed(path: requested, cause: error)
        }
        return try apply(closure, added: images.count..<closure.images.count, opened: record.opened, requested: requested, mode: mode, via: via,
                         fixups: .runs)
    }

    /// Where the fixups of the images a `dlopen` adds come from.
    private enum AddedFixups {
        /// The closure's runs, decoded and checked as any closure's.
        case runs
        /// Resolved in process just now, per added image (``BuiltDlopen``): written as resolved.
        case resolved([[ResolvedFixup]])

        /// Whether each added image's identity and plan are checked against its file: a closure
        /// built just now took both from these files (it is opened again only to see it is the
        /// same file, ``ClosureImage/openJustIdentified(closurePath:contentOnly:checks:)``).
        var checksPlans: Bool {
            if case .runs = self { return true }
            return false
        }
    }

    /// Per image of `images`, its base in the launch's shared cache region when it lies there
    /// (nil for one mapped from its file); an image outside the region is refused.
    private func cacheBases(of images: ArraySlice<ClosureImage>, requested: String) throws(LoadError) -> [UInt64?] {
        try images.map { (image) throws(LoadError) -> UInt64? in
            guard let slot = image.cacheSlot else { return nil }
            guard let range = launchMemory.sharedRange else {
                throw .unusable(path: requested, reason: "its dlopen closure takes \(image.path) from a shared cache the launch did not map")
            }
            guard slot.offset <= range.size, image.plan.vmSize <= range.size - slot.offset else {
                throw .failed(path: requested, cause: .corrupt(path: closurePath, offset: 0, what:
                    "dlopen closure for \(requested): image \(image.path) at +\(hex(slot.offset)) leaves the shared cache's \(range.size)-byte region"))
            }
            return range.base &+ slot.offset
        }
    }

    /// Maps, fixes up, protects and initializes the images `closure` adds.
    /// `via`: "closure" (the launch closure's) or "runtime closure" (built now).
    private func apply(_ closure: LaunchClosure, added: Range<Int>, opened: Int, requested: String, mode: DynamicOpenMode,
                       via: String, fixups: AddedFixups) throws(LoadError) -> UInt64 {
        if request.signingPolicy != .default {
            try request.signingPolicy.check([(closure.images[0].path, closure.images[0].identity.signature)]
                + closure.images[added].map { ($0.path, $0.identity.signature) })
        }
        // What the closure says is checked against the files before anything is mapped:
        // each added image's identity, then its plan against its own header.
        let files: [ImageDescriptor]
        do throws(ClosureError) {
            if fixups.checksPlans {
                var hashed = 0
                files = try closure.openImages(added, closurePath: closurePath, checks: configuration.identityChecks, hashedImages: &hashed)
            } else {
                // Identified just now by the builder, from these paths.
                files = try added.map { (index) throws(ClosureError) in
                    try closure.images[index].openJustIdentified(closurePath: closurePath, contentOnly: closure.contentOnlyIdentity,
                                                                 checks: configuration.identityChecks)
                }
            }
            for (position, index) in added.enumerated() where fixups.checksPlans && closure.images[index].cacheSlot == nil {
                if let disagreement = closure.images[index].planDisagreement(arch: closure.arch, file: files[position]) {
                    throw ClosureError.plan(path: closurePath, image: closure.images[index].path, disagreement)
                }
            }
        } catch {
            throw .failed(path: requested, cause: error)
        }
        // An image the launch's shared cache holds lies in its range: not mapped, only patched.
        // (nil when none is: a fresh process then makes no `[UInt64?]`, a first use of its type.)
        var cached: [UInt64?]?
        if closure.images[added].contains(where: { $0.cacheSlot != nil }) { cached = try cacheBases(of: closure.images[added], requested: requested) }
        let memory = try LaunchMemory(plans: closure.images[added].map(\.plan), descriptors: files, firstSlide: nextSlide,
                                      shared: cached.map { LaunchMemory.SharedImages(range: nil, bases: $0) })
        try memory.releasedOnFailure { () throws(LoadError) in
            // The launch's page checks cover what dlopen adds: `--verify-pages`, and page-in's
            // check of each page it fills (a dlopen maps eagerly, so its pages are checked now).
            if request.verifyPages || request.fixups == .pageIn {
                _ = try EagerPageVerification.verify(memory, signatures: Array(closure.mappedSignatures[added]))
            }
            if cached != nil {
                let pages: [[UInt64]]
                do throws(ClosureError) {
                    pages = try closure.cachePatchPages(closurePath: closurePath)
                } catch {
                    throw LoadError.failed(path: requested, cause: error)
                }
                try memory.openForPatches(Array(pages[added]))
            }
            let bases = closure.images.indices.map { $0 < added.lowerBound ? book.base(of: $0) : memory.images[$0 - added.lowerBound].base }
            switch fixups {
            case .runs:
                let values = closure.bindTargets.values(bases: bases)
                for index in added {
                    do throws(ClosureError) {
                        try closure.applyFixups(ofImage: index, writer: memory.writer(image: index - added.lowerBound), targetValues: values,
                                                closurePath: closurePath)
                    } catch {
                        throw LoadError.failed(path: requested, cause: error)
                    }
                }
            case let .resolved(resolved):
                for (position, imageFixups) in resolved.enumerated() {
                    let writer = memory.writer(image: position)
                    for fixup in imageFixups {
                        try writer.store(fixup.value(imageBase: writer.base, imageBases: bases), vmOffset: fixup.vmOffset)
                    }
                }
            }
            try memory.applyProtections()
        }
        // Committed before any initializer runs: one may call dlopen itself.
        images = closure.images
        book.add(memory, opened: opened, mode: mode)
        earlier.append(requested)
        let initializers = try book.recordOpen(requested, via: via, memory: memory, paths: closure.images[added].map(\.path),
                                               order: closure.initializerOrder.map { $0 - added.lowerBound }, run: request.run,
                                               arch: closure.arch) { closure.images[added.lowerBound + $0].initializers }
        try CodeRunner.runInitializers(initializers, in: memory)
        return DynamicHandle.image(book.base(of: opened), firstOnly: mode.contains(.first))
    }

    func symbol(_ name: String, handle: UInt64) throws(LoadError) -> UInt64 {
        let starts = try book.searched(from: handle, for: name) { image in
            images[image].dependencies.filter { $0.target >= 0 }.map { ($0.target, $0.kind) }
        }
        for start in starts {
            if let address = try find("_" + name, from: start) { return address }
        }
        throw .unusable(path: name, reason: "symbol not found")
    }

    /// `name` in image `start`'s export trie, then in the dylibs it re-exports (depth first,
    /// in load-command order, each image once): dyld's `findExportedSymbol`.
    private func find(_ name: String, from start: Int) throws(LoadError) -> UInt64? {
        var stack: [(image: Int, name: String)] = [(start, name)]
        var visited = [Bool](repeating: false, count: images.count)
        while let (index, wanted) = stack.popLast() {
            guard !visited[index] else { continue }
            visited[index] = true
            let symbol: ExportedSymbol?
            let trie = try exportTrie(index)
            do {
                symbol = try trie?.lookup(wanted)
            } catch {
                throw .malformed(error.inFile(images[index].path))
            }
            if let symbol {
                switch symbol.definition {
                case let .image(offset): return symbol.kind == .absolute ? offset : book.base(of: index) &+ offset
                case let .stubAndResolver(stubOffset, _): return book.base(of: index) &+ stubOffset
                case let .functionVariant(defaultOffset, _): return book.base(of: index) &+ defaultOffset
                case let .reexport(ordinal, importedName):
                    let dependencies = images[index].dependencies
                    guard ordinal >= 1, ordinal <= dependencies.count, dependencies[ordinal - 1].target >= 0 else { return nil }
                    visited[dependencies[ordinal - 1].target] = false
                    stack.append((dependencies[ordinal - 1].target, importedName.isEmpty ? wanted : importedName))
                    continue
                }
            }
            for dependency in images[index].dependencies.reversed() where dependency.kind == .reexport && dependency.target >= 0 {
                stack.append((dependency.target, wanted))
            }
        }
        return nil
    }

    /// Image `index`'s export trie, read once: from its mapped bytes where the closure records
    /// the trie's place (nothing parsed, no file opened), else from its file.
    private func exportTrie(_ index: Int) throws(LoadError) -> ExportTrie? {
        if let trie = parsedState(index).trie { return trie }
        let image = images[index].exportTrie == nil ? try parsedImage(index) : nil
        let trie: ExportTrie?
        do throws(MachOError) {
            if let range = images[index].exportTrie {
                trie = try ExportTrie(parsing: ByteView(UnsafeMemory.copy(address: book.base(of: index) &+ range.lowerBound, size: UInt64(range.count))))
            } else {
                trie = try image?.exportTrie()
            }
        } catch {
            throw .malformed(error.inFile(images[index].path))
        }
        parsed[index].trie = .some(trie)
        return trie
    }

    /// Launch image `index` read where it is mapped, when all of it can be
    /// (``ImageFile/readableExtent(_:)``) and every page of it is mapped now (none left to
    /// page-in, none in the shared cache); valid while the launch's memory is.
    private func mappedSlice(_ index: Int) -> ByteView? {
        guard index < launch.images.count, images[index].cacheSlot == nil, launchMemory.pagedRanges(ofImage: index).allSatisfy({ $0.isEmpty }),
              let extent = ImageFile.readableExtent(images[index].plan) else { return nil }
        return UnsafeMemory.borrowedView(address: launchMemory.images[index].base, count: extent)
    }

    private func parsedImage(_ index: Int) throws(LoadError) -> MachOImage {
        if let image = parsedState(index).image { return image }
        let image = try ImageFile.load(path: images[index].path, arch: launch.arch, root: request.root).image
        parsed[index].image = image
        return image
    }

    func describe(_ address: UInt64) -> DynamicAddress? {
        for index in images.indices {
            let base = book.base(of: index)
            guard address >= base, address - base < images[index].plan.vmSize else { continue }
            guard let image = try? parsedImage(index) else { return DynamicAddress(path: images[index].path, base: base, symbol: nil, symbolAddress: 0) }
            return DynamicAddress.describe(address, image: image, path: images[index].path, base: base)
        }
        return nil
    }
}
