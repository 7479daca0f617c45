import LoaderCore

/// What a stub root must hold so that the dependency graphs of some Mach-O binaries load
/// on a system without macOS's libraries: one stub dylib per absolute install name the
/// graphs load but that is found nowhere, exporting exactly the symbols imported from it,
/// and a stub host executable exporting what flat-namespace lookups find in no image.
///
/// Built by ``init(binaries:arches:root:)``, written by ``write(toolchain:)``.
package struct StubRootPlan: Equatable, Sendable {
    /// The stub root directory (absolute).
    package let root: String
    /// What the stubs and the host are built for: the binaries' platform.
    package let platform: StubPlatform
    /// Sorted by install name.
    package var stubs: [StubDylib]
    package var host: StubHost
    /// Imports nothing in the plan provides (the graphs will fail to bind them).
    package var unresolved: [UnresolvedImport]
    /// Non-weak dependencies found nowhere that a stub cannot stand for (not absolute).
    package var missingDylibs: [MissingDylib]

    /// `DIR/bin/host`.
    package static func hostPath(root: String) -> String { LaunchRoots.hostPath(root: root) }

    /// Distinct exported names summed over the stubs (a name exported by several slices
    /// of one stub counts once).
    package var stubSymbolCount: Int {
        stubs.reduce(0) { $0 + Set($1.slices.flatMap { $0.exports.map(\.name) }).count }
    }

    /// Distinct names the host exports over its slices.
    package var hostSymbolCount: Int { Set(host.slices.flatMap { $0.exports.map(\.name) }).count }

    /// `stub root DIR: N stub dylibs, M symbols; host exports K symbols`.
    package var summary: String {
        "stub root \(root): \(stubs.count) stub dylibs, \(stubSymbolCount) symbols; host exports \(hostSymbolCount) symbols"
    }

    /// Which files of the root are stubs, one line each: `host PATH (PLATFORM)`, then
    /// `stub PATH (install name NAME)` per stub.
    package var stubListing: [String] {
        ["host \(host.path) (\(platform.rawValue)\(host.rpaths.map { ", LC_RPATH " + $0 }.joined()))"]
            + stubs.map { "stub \($0.path) (install name \($0.installName))" }
    }
}

/// A symbol a stub exports: an 8-byte datum, never code.
package struct StubExport: Hashable, Comparable, Sendable {
    package let name: String
    /// Exported as a weak definition, because an importer binds it with weak coalescing.
    package var isWeakDefinition: Bool

    package init(name: String, isWeakDefinition: Bool) { (self.name, self.isWeakDefinition) = (name, isWeakDefinition) }

    package static func < (a: StubExport, b: StubExport) -> Bool { a.name < b.name }
}

/// One architecture of a stub file.
package struct StubSlice: Equatable, Sendable {
    package let arch: String
    /// Sorted by name.
    package var exports: [StubExport]
    /// Links the runtime's stub (`/usr/lib/libobjc.A.dylib`), as a real framework links
    /// libobjc: set on framework stubs of graphs with Objective-C metadata and on stubs
    /// exporting classes (``StubObjC``).
    package var linksRuntime = false
}

/// A stub dylib: thin, or fat when the graphs need it for several architectures.
package struct StubDylib: Equatable, Sendable {
    /// Its `LC_ID_DYLIB`: the install name the graphs load.
    package let installName: String
    /// Where it is written: the install name under the root.
    package let path: String
    /// The highest current and compatibility versions any load command asks for, packed
    /// as `dylib_command` packs them (xxxx.yy.zz).
    package let currentVersion: UInt32, compatibilityVersion: UInt32
    /// Sorted by architecture name.
    package var slices: [StubSlice]
}

/// The stub host executable (`MH_EXECUTE`), standing for the program (a Python
/// interpreter, say) that loads the binaries on macOS.
package struct StubHost: Equatable, Sendable {
    /// `DIR/bin/host`, or an app bundle's executable (``StubAppLayout``).
    package let path: String
    /// Its `LC_RPATH`s: an app host's points at the bundle's `Frameworks`.
    package let rpaths: [String]
    /// One per architecture of the plan, sorted by architecture name.
    package var slices: [StubSlice]
}

/// An import the stub root leaves unbound.
package struct UnresolvedImport: Hashable, Sendable, CustomStringConvertible {
    package let symbol: String, importedBy: String, arch: String
    /// Where the import looks: an install name, "this image", "the main executable".
    package let expectedIn: String

    package var description: String {
        "symbol not found: \(symbol)\n  referenced from: \(importedBy) (\(arch))\n  expected in: \(expectedIn)"
    }
}

/// A non-weak dependency found nowhere whose install name is not absolute.
package struct MissingDylib: Equatable, Sendable, CustomStringConvertible {
    package let installName: String, neededBy: String, arch: String
    package let tried: [String]

    package var description: String {
        "library not loaded: \(installName)\n  referenced from: \(neededBy) (\(arch))\n  tried: "
            + (tried.isEmpty ? "(no candidate paths)" : tried.joined(separator: ", "))
    }
}
