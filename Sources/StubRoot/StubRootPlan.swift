import LoaderCore

/// What a stub root must hold so that the dependency graphs of some Mach-O binaries load
/// on a system without macOS's libraries: one stub dylib per absolute install name the
/// graphs load but that is found nowhere, exporting exactly the symbols imported from it,
/// and a stub host executable exporting what flat-namespace lookups find in no image.
///
/// Built by ``init(binaries:arches:root:)``, written by ``write(toolchain:)``.
public struct StubRootPlan: Equatable, Sendable {
    /// The stub root directory (absolute).
    public let root: String
    /// Sorted by install name.
    public var stubs: [StubDylib]
    public var host: StubHost
    /// Imports nothing in the plan provides (the graphs will fail to bind them).
    public var unresolved: [UnresolvedImport]
    /// Non-weak dependencies found nowhere that a stub cannot stand for (not absolute).
    public var missingDylibs: [MissingDylib]

    /// `DIR/bin/host`.
    public static func hostPath(root: String) -> String { LaunchRoots.hostPath(root: root) }

    /// Distinct exported names summed over the stubs (a name exported by several slices
    /// of one stub counts once).
    public var stubSymbolCount: Int {
        stubs.reduce(0) { $0 + Set($1.slices.flatMap { $0.exports.map(\.name) }).count }
    }

    /// Distinct names the host exports over its slices.
    public var hostSymbolCount: Int { Set(host.slices.flatMap { $0.exports.map(\.name) }).count }

    /// `stub root DIR: N stub dylibs, M symbols; host exports K symbols`.
    public var summary: String {
        "stub root \(root): \(stubs.count) stub dylibs, \(stubSymbolCount) symbols; host exports \(hostSymbolCount) symbols"
    }
}

/// A symbol a stub exports: an 8-byte datum, never code.
public struct StubExport: Hashable, Comparable, Sendable {
    public let name: String
    /// Exported as a weak definition, because an importer binds it with weak coalescing.
    public var isWeakDefinition: Bool

    public init(name: String, isWeakDefinition: Bool) {
        self.name = name
        self.isWeakDefinition = isWeakDefinition
    }

    public static func < (a: StubExport, b: StubExport) -> Bool { a.name < b.name }
}

/// One architecture of a stub file.
public struct StubSlice: Equatable, Sendable {
    public let arch: String
    /// Sorted by name.
    public var exports: [StubExport]

    public init(arch: String, exports: [StubExport]) {
        self.arch = arch
        self.exports = exports
    }
}

/// A stub dylib: thin, or fat when the graphs need it for several architectures.
public struct StubDylib: Equatable, Sendable {
    /// Its `LC_ID_DYLIB`: the install name the graphs load.
    public let installName: String
    /// Where it is written: the install name under the root.
    public let path: String
    /// The highest current and compatibility versions any load command asks for, packed
    /// as `dylib_command` packs them (xxxx.yy.zz).
    public let currentVersion: UInt32
    public let compatibilityVersion: UInt32
    /// Sorted by architecture name.
    public var slices: [StubSlice]
}

/// The stub host executable (`MH_EXECUTE`), standing for the program (a Python
/// interpreter, say) that loads the binaries on macOS.
public struct StubHost: Equatable, Sendable {
    public let path: String
    /// One per architecture of the plan, sorted by architecture name.
    public var slices: [StubSlice]
}

/// An import the stub root leaves unbound.
public struct UnresolvedImport: Hashable, Sendable, CustomStringConvertible {
    public let symbol: String
    public let importedBy: String
    public let arch: String
    /// Where the import looks: an install name, "this image", "the main executable".
    public let expectedIn: String

    public var description: String {
        "symbol not found: \(symbol)\n  referenced from: \(importedBy) (\(arch))\n  expected in: \(expectedIn)"
    }
}

/// A non-weak dependency found nowhere whose install name is not absolute.
public struct MissingDylib: Equatable, Sendable, CustomStringConvertible {
    public let installName: String
    public let neededBy: String
    public let arch: String
    public let tried: [String]

    public var description: String {
        "library not loaded: \(installName)\n  referenced from: \(neededBy) (\(arch))\n  tried: "
            + (tried.isEmpty ? "(no candidate paths)" : tried.joined(separator: ", "))
    }
}
