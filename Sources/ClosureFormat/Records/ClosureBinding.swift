import LaunchPlan

/// What a closure was built for: one app, under one root, in one host, for one architecture,
/// by one builder. A closure is used only for the very request it binds; anything else is
/// refused with the field that differs.
///
/// Encoding: `builder`, `arch`, `root`, `app`, `host`, `inserted`, `policy` strings; the body
/// then holds the hash of the image list (``imageListHash(_:)``).
package struct ClosureBinding: Equatable, Sendable {
    /// Who built it (``LaunchClosure/builderIdentity``).
    package var builder: String
    package var arch: String
    /// The system root absolute install names were looked up under, normalized ("" for none).
    package var root: String
    /// The app's main image, symlinks resolved.
    package var app: String
    /// The host executable a bundle or dylib was loaded into, symlinks resolved ("" for none).
    package var host: String
    /// The libraries inserted at launch, symlinks resolved, joined by `:` ("" for none).
    package var inserted: String
    /// The signature policy the closure's images were accepted under.
    package var policy: SigningPolicy

    package init(builder: String = LaunchClosure.builderIdentity, arch: String, root: String, app: String, host: String,
                inserted: String = "", policy: SigningPolicy = .default) {
        (self.builder, self.arch, self.root, self.app, self.host, self.inserted, self.policy) = (builder, arch, root, app, host, inserted, policy)
    }

    /// The inserted libraries' paths, in order.
    package var insertedPaths: [String] { inserted.split(separator: ":").map(String.init) }

    /// The hash the binding keeps of a closure's ordered image paths (xxh3-64 of the paths,
    /// each followed by a zero byte): a record whose path was edited without it is refused.
    package static func imageListHash(_ paths: [String]) -> UInt64 {
        var bytes: [UInt8] = []
        for path in paths { bytes += path.utf8; bytes.append(0) }
        return UnsafeHash.xxh3(bytes)
    }

    /// How many root images a closure with this binding has: the host, if it names one, then the app.
    package var expectedRootCount: Int { host.isEmpty ? 1 : 2 }

    package typealias Field = ClosureError.BindingField

    /// The first field in which this closure's binding differs from `request`, with both values.
    package func mismatch(with request: ClosureBinding) -> (field: Field, expected: String, found: String)? {
        // Compared whole first: a launch's match makes no array of the fields.
        guard self != request else { return nil }
        for field in Field.allCases where self[field] != request[field] {
            return (field, request[field], self[field])
        }
        return nil
    }

    package subscript(field: Field) -> String {
        switch field {
        case .builder: builder
        case .arch: arch
        case .root: root
        case .app: app
        case .host: host
        case .inserted: inserted
        case .policy: policy.name
        }
    }

    init(parsing r: inout ClosureReader) throws(ClosureError) {
        self.init(builder: try r.string(), arch: try r.string(), root: try r.string(), app: try r.string(), host: try r.string(),
                  inserted: try r.string())
        let name = try r.string()
        guard let policy = SigningPolicy(name: name) else {
            throw r.corrupt("a binding with signature policy \"\(name)\", none this loader knows")
        }
        self.policy = policy
    }

    func encode(into w: inout ClosureWriter) {
        for field in [builder, arch, root, app, host, inserted, policy.name] { w.string(field) }
    }
}
