import MachOReader
import LaunchPlan
import LaunchMemory

/// `dlopen`, `dlsym`, `dlclose` and `dladdr` for code a launch runs (docs/dyld-rules.md,
/// rule 24), which the project's libSystem calls through its host services table; the
/// table's address names the launch whose loader answers (``DynamicLoaderRegistry``).
package protocol DynamicLoader: AnyObject {
    /// Loads `path` and what it needs, runs the initializers it adds, and returns its handle
    /// (``DynamicHandle/image(_:firstOnly:)``), the same again for an image already loaded
    /// under any path that names it. `mode` (``DynamicOpenMode``) as dyld4's `dlopen_from`:
    /// `RTLD_NOLOAD` fails for an image not loaded, loading nothing; `RTLD_LOCAL` hides an
    /// image it loads from ``DynamicHandle/defaultSearch`` until an `open` without it;
    /// `RTLD_FIRST` makes a handle whose `dlsym` searches the image alone.
    func open(_ path: String, mode: Int32) throws(LoadError) -> UInt64
    /// The address of `name` (a C name) as dyld4's `dlsym` finds it: from an image's handle,
    /// in the image then its dependents (``DynamicHandle/dlsymSearchOrder(from:imageCount:dependencies:)``),
    /// or the image and its re-exports alone for an `RTLD_FIRST` handle;
    /// ``DynamicHandle/defaultSearch``: every image not hidden by `RTLD_LOCAL`, in load order;
    /// ``DynamicHandle/mainOnly``: the main executable and its re-exports.
    func symbol(_ name: String, handle: UInt64) throws(LoadError) -> UInt64
    /// The image holding `address` and the nearest exported symbol at or below it.
    func describe(_ address: UInt64) -> DynamicAddress?
    /// The slide of the next `dlopen`'s reservation (`compare` uses one for both paths); nil: random.
    var nextSlide: UInt64? { get set }
    /// Where its images are mapped, their opens, and what each `open` did.
    var book: DynamicLoadBook { get set }
}

extension DynamicLoader {
    /// Balances one ``open(_:mode:)``; images stay mapped until the launch's memory is released.
    package func close(_ handle: UInt64) throws(LoadError) { try book.close(handle) }

    /// Releases the memory of every image it loaded (with the launch's memory).
    package func releaseLoaded() {
        for memory in book.memories { memory.release() }
    }

    /// What each `open` did, in order (the first ``DynamicLoadEvent/limit``).
    package var events: [DynamicLoadEvent] { book.events }
    /// The memory of each `open` that added images, in order.
    package var loadedMemories: [LaunchMemory] { book.memories }
}

/// `dlopen`'s mode bits, Darwin's values (`<dlfcn.h>`).
package struct DynamicOpenMode: OptionSet, Sendable {
    package let rawValue: Int32
    package init(rawValue: Int32) { self.rawValue = rawValue }

    package static let lazy = DynamicOpenMode(rawValue: 0x1)
    package static let now = DynamicOpenMode(rawValue: 0x2)
    package static let local = DynamicOpenMode(rawValue: 0x4)
    package static let global = DynamicOpenMode(rawValue: 0x8)
    package static let noLoad = DynamicOpenMode(rawValue: 0x10)
    package static let noDelete = DynamicOpenMode(rawValue: 0x80)
    package static let first = DynamicOpenMode(rawValue: 0x100)

    /// Concrete (as ``VMProtection``'s): no first use of the default's witness table in a `dlopen`.
    package func contains(_ member: Self) -> Bool { rawValue & member.rawValue == member.rawValue }
}

/// The handles `dlopen` returns and `dlsym` takes.
package enum DynamicHandle {
    /// `RTLD_DEFAULT` (Darwin: `(void *)-2`): every image not hidden by `RTLD_LOCAL`, in load
    /// order; also what `dlopen(NULL)` returns, as dyld4's does.
    package static let defaultSearch = UInt64(bitPattern: -2)
    /// `RTLD_MAIN_ONLY` (`(void *)-5`): the main executable alone; `dlopen(NULL, RTLD_FIRST)` returns it.
    package static let mainOnly = UInt64(bitPattern: -5)

    /// The handle of the image whose Mach-O header is at `base`; `RTLD_FIRST` sets the low bit
    /// (a header is page aligned), as dyld4's `handleFromLoader` does in its loader's address.
    package static func image(_ base: UInt64, firstOnly: Bool) -> UInt64 {
        base | (firstOnly ? 1 : 0)
    }

    /// The header address an image handle names, and whether it was opened `RTLD_FIRST`.
    package static func split(_ handle: UInt64) -> (base: UInt64, firstOnly: Bool) {
        (handle & ~1, handle & 1 != 0)
    }

    /// The images `dlsym` searches from the handle of image `start` (not opened `RTLD_FIRST`),
    /// in order: dyld4's `Loader::hasExportedSymbol` in `dlsymSelf` mode, the image, then each
    /// dependency in load-command order, depth first, each image once; upward links are
    /// followed only when they re-export. `dependencies(i)`: image i's edges that resolved, each to an image below `imageCount`.
    /// An explicit stack: a chain of any depth costs no stack.
    package static func dlsymSearchOrder(from start: Int, imageCount: Int, dependencies: (Int) -> [(target: Int, kind: DylibLinkKind)]) -> [Int] {
        var order: [Int] = []
        var visited = [Bool](repeating: false, count: imageCount)
        var stack = [start]
        while let image = stack.popLast() {
            guard !visited[image] else { continue }
            visited[image] = true
            order.append(image)
            for edge in dependencies(image).reversed() where edge.kind != .upward && !visited[edge.target] {
                stack.append(edge.target)
            }
        }
        return order
    }
}

/// What `dladdr` reports.
package struct DynamicAddress: Equatable, Sendable {
    package var path: String
    package var base: UInt64
    package var symbol: String?
    package var symbolAddress: UInt64

    package init(path: String, base: UInt64, symbol: String?, symbolAddress: UInt64) {
        (self.path, self.base, self.symbol, self.symbolAddress) = (path, base, symbol, symbolAddress)
    }

    /// `dladdr`'s answer for `address` in an image mapped at `base`: the nearest exported symbol at or below it.
    package static func describe(_ address: UInt64, image: MachOImage, path: String, base: UInt64) -> DynamicAddress {
        var best: (name: String, address: UInt64)?
        try? image.exportTrie()?.forEachSymbol { symbol in
            guard case let .image(offset) = symbol.definition, symbol.kind != .absolute else { return }
            let symbolAddress = base &+ offset
            if symbolAddress <= address, best.map({ symbolAddress > $0.address }) ?? true {
                best = (String(symbol.name.dropFirst(symbol.name.hasPrefix("_") ? 1 : 0)), symbolAddress)
            }
        }
        return DynamicAddress(path: path, base: base, symbol: best?.name, symbolAddress: best?.address ?? 0)
    }
}

/// What a launch's `dlopen`s did, in order (for the report and tests).
package struct DynamicLoadEvent: Equatable, Sendable {
    /// The path as code passed it.
    package var requested: String
    /// The images it added, in load order (none when the image was loaded already).
    package var loaded: [String]
    /// The images whose initializers ran, in order.
    package var initialized: [String]
    /// How: "closure" (the launch closure's dlopen closure), "runtime closure" (built at run time), or "dyld2".
    package var via: String

    /// The most events a launch keeps.
    package static let limit = 4096

    package init(requested: String, loaded: [String], initialized: [String], via: String) {
        (self.requested, self.loaded, self.initialized, self.via) = (requested, loaded, initialized, via)
    }
}
