import MachOReader
import LaunchPlan

/// How an image was linked and found at install time: install name, dependency edges and
/// LC_RPATHs. A launch needs none of it, so they are kept as encoded in the image record,
/// checked when it is read, and decoded when asked: a launch of 400 frameworks makes no
/// `String` for its ~4,400 dependency edges.
///
/// Encoding (the image record's, docs/closure-format.md): `installName` string; later in
/// the record, dependency count + ``ClosureDependency``s, and rpath count + strings.
struct ClosureLinkage: Equatable, Sendable {
    /// The install name's UTF-8 bytes ("" for none).
    private(set) var installName: ArraySlice<UInt8>
    /// The dependency count and records, as encoded.
    private(set) var dependencies: ArraySlice<UInt8>
    /// The rpath count and strings, as encoded.
    private(set) var rpaths: ArraySlice<UInt8>

    /// Reads the dependency count and records where `r` is, checks each (a known link
    /// kind, a target among `imageCount` images or -1) without decoding its name: their bytes.
    static func readDependencies(_ r: inout ClosureReader, imagePath: String, imageCount: Int) throws(ClosureError) -> ArraySlice<UInt8> {
        let start = r.position
        try forEachDependency(&r, imagePath: imagePath, imageCount: imageCount) { _, _, _ in }
        return r.bytes[start..<r.position]
    }

    /// Reads the rpath count and strings where `r` is: their bytes.
    static func readRPaths(_ r: inout ClosureReader) throws(ClosureError) -> ArraySlice<UInt8> {
        let start = r.position
        for _ in 0..<(try r.count(of: "rpath")) { _ = try r.blobRange() }
        return r.bytes[start..<r.position]
    }

    var installNameString: String { String(decoding: installName, as: UTF8.self) }

    mutating func setInstallName(_ name: String) { installName = ArraySlice(name.utf8) }

    /// The dependencies, decoded.
    var decodedDependencies: [ClosureDependency] {
        var r = ClosureReader(dependencies, path: "")
        var result: [ClosureDependency] = []
        Self.decodingChecked { () throws(ClosureError) in
            try Self.forEachDependency(&r, imagePath: "", imageCount: Int.max) { name, kind, target in
                result.append(ClosureDependency(installName: String(decoding: dependencies[name], as: UTF8.self), kind: kind, target: target))
            }
        }
        return result
    }

    mutating func setDependencies(_ list: [ClosureDependency]) { dependencies = Self.encoded(list) }

    /// The rpaths, decoded.
    var decodedRPaths: [String] {
        var r = ClosureReader(rpaths, path: "")
        var result: [String] = []
        Self.decodingChecked { () throws(ClosureError) in
            result = try r.list(of: "rpath") { (r) throws(ClosureError) in try r.string() }
        }
        return result
    }

    mutating func setRPaths(_ list: [String]) { rpaths = Self.encoded(list) }

    /// Visits every encoded dependency where `r` is, checked: where its name's bytes lie in
    /// `r.bytes`, its link kind and target. The one walk both checking and decoding make.
    private static func forEachDependency(
        _ r: inout ClosureReader, imagePath: String, imageCount: Int,
        _ body: (Range<Int>, DylibLinkKind, Int) -> Void
    ) throws(ClosureError) {
        for _ in 0..<(try r.count(of: "dependency", minimumSize: ClosureDependency.minimumEncodedSize)) {
            let start = r.position
            let name = try r.blobRange()
            let code = Int(try r.u8())
            let target = try r.sleb()
            guard code < ClosureDependency.linkKindCodes.count, target >= -1, target < Int64(imageCount) else {
                throw r.corrupt("dependency \(String(decoding: r.bytes[name], as: UTF8.self)) of \(imagePath) has kind \(code) and target \(target)", at: start)
            }
            body(name, ClosureDependency.linkKindCodes[code], Int(target))
        }
    }

    /// Runs a decode of bytes checked when read or written by ``encoded(_:)``: it cannot fail.
    private static func decodingChecked(_ decode: () throws(ClosureError) -> Void) {
        do throws(ClosureError) {
            try decode()
        } catch {
            preconditionFailure("closure linkage bytes were checked when read: \(error)")
        }
    }

    private static func encoded(_ dependencies: [ClosureDependency]) -> ArraySlice<UInt8> {
        var w = ClosureWriter()
        w.list(dependencies) { $1.encode(into: &$0) }
        return w.bytes[...]
    }

    private static func encoded(_ rpaths: [String]) -> ArraySlice<UInt8> {
        var w = ClosureWriter()
        w.list(rpaths) { $0.string($1) }
        return w.bytes[...]
    }
}

extension ClosureLinkage {
    init(installName: String, dependencies: [ClosureDependency], rpaths: [String]) {
        self.init(installName: ArraySlice(installName.utf8), dependencies: Self.encoded(dependencies), rpaths: Self.encoded(rpaths))
    }
}
