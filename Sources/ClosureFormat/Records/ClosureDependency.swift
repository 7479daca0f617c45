import MachOReader
import LaunchPlan

/// One dependency edge of a closure image, in load-command order.
///
/// Encoding: `installName` string, link-kind byte (index in ``linkKindCodes``), `target`
/// SLEB (a node index, or -1 for a missing weak dylib). Read and checked by ``ClosureLinkage``.
package struct ClosureDependency: Equatable, Sendable {
    package var installName: String
    package var kind: DylibLinkKind
    /// The node the edge resolved to, or -1 for a weak dylib that was missing.
    package var target: Int

    package init(installName: String, kind: DylibLinkKind, target: Int) {
        (self.installName, self.kind, self.target) = (installName, kind, target)
    }

    /// The byte each link kind is stored as: its index here.
    static let linkKindCodes: [DylibLinkKind] = [.regular, .weak, .reexport, .upward, .lazy]
    static let minimumEncodedSize = 3

    func encode(into w: inout ClosureWriter) {
        w.string(installName)
        w.u8(Self.linkKindCodes.firstIndex(of: kind).map(UInt8.init) ?? 0)
        w.sleb(Int64(target))
    }
}

/// A weak-linked dylib that was missing at install time, and the image that needed it.
///
/// Encoding: `installName` string, `neededBy` string.
package struct ClosureMissingDylib: Equatable, Sendable {
    package var installName: String
    package var neededBy: String

    package init(installName: String, neededBy: String) {
        (self.installName, self.neededBy) = (installName, neededBy)
    }

    static let minimumEncodedSize = 2

    init(parsing r: inout ClosureReader) throws(ClosureError) {
        installName = try r.string()
        neededBy = try r.string()
    }

    func encode(into w: inout ClosureWriter) {
        w.string(installName)
        w.string(neededBy)
    }
}
