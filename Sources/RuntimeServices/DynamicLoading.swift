import MachOReader
import LaunchPlan
import LaunchMemory

/// `dlopen`, `dlsym`, `dlclose` and `dladdr` for code a launch runs (docs/dyld-rules.md,
/// rule 24), which the project's libSystem calls through its host services table; the
/// table's address names the launch whose loader answers (``DynamicLoaderRegistry``).
package protocol DynamicLoader: AnyObject {
    /// Loads `path` and what it needs, runs the initializers it adds, and returns its handle
    /// (its Mach-O header's address), the same again for an image already loaded.
    func open(_ path: String, mode: Int32) throws(LoadError) -> UInt64
    /// The address of `name` (a C name) in the image of `handle` or its re-exports;
    /// ``DynamicHandle/defaultSearch`` searches every image in load order.
    func symbol(_ name: String, handle: UInt64) throws(LoadError) -> UInt64
    /// Balances one ``open(_:mode:)``; images stay mapped until the launch's memory is released.
    func close(_ handle: UInt64) throws(LoadError)
    /// The image holding `address` and the nearest exported symbol at or below it.
    func describe(_ address: UInt64) -> DynamicAddress?
    /// Releases the memory of every image it loaded (with the launch's memory).
    func releaseLoaded()
    /// The slide of the next `dlopen`'s reservation (`compare` uses one for both paths); nil: random.
    var nextSlide: UInt64? { get set }
    /// What each `open` did, in order (the first ``DynamicLoadEvent/limit``).
    var events: [DynamicLoadEvent] { get }
    /// The memory of each `open` that added images, in order.
    var loadedMemories: [LaunchMemory] { get }
}

/// Handles `dlsym` takes besides an image's.
package enum DynamicHandle {
    /// `RTLD_DEFAULT` (Darwin: `(void *)-2`): every image, in load order.
    package static let defaultSearch = UInt64(bitPattern: -2)
}

/// What `dladdr` reports.
package struct DynamicAddress: Equatable, Sendable {
    package var path: String
    package var base: UInt64
    package var symbol: String?
    package var symbolAddress: UInt64

    package init(path: String, base: UInt64, symbol: String?, symbolAddress: UInt64) {
        self.path = path
        self.base = base
        self.symbol = symbol
        self.symbolAddress = symbolAddress
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
        self.requested = requested
        self.loaded = loaded
        self.initialized = initialized
        self.via = via
    }
}
