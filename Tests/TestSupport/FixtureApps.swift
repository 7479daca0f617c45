import Foundation

/// The fixture apps built by `tools/build-fixtures` and what their manifests expect.
package struct FixtureApp: CustomStringConvertible, Sendable {
    package static let buildDirectory = Paths.repoRoot.appendingPathComponent("build/fixtures")
    package static let variants = ["x86_64-chained", "x86_64-opcodes", "arm64-chained", "arm64-opcodes"]

    /// What a launch must do, from the manifest.
    package enum Expectation: Sendable {
        case result(Int32, initOrder: [String]?)
        case missingSymbol(symbol: String, image: String, library: String)
        case missingDylib(image: String, installName: String)
    }

    package let name: String
    package let variant: String
    /// Where the variant directories are (the build directory, or a scratch copy).
    package let directory: URL
    package let expectation: Expectation
    /// Manifest image name for each shipped path suffix (for naming initializers).
    package let imagePaths: [(name: String, path: String)]
    /// What main opens with `dlopen`, from the manifest's "dlopen": the path as main passes
    /// it, the image, and the images whose initializers that `dlopen` runs, in order.
    package struct Dlopen: Sendable {
        package let path: String
        package let image: String
        package let initOrder: [String]
    }
    package let dlopen: Dlopen?

    package var arch: String { String(variant.split(separator: "-")[0]) }
    package var bundle: String { directory.appendingPathComponent("\(variant)/\(name).app").path }
    package var executable: String { bundle + "/" + name }
    package var root: String { directory.appendingPathComponent("\(variant)/root").path }
    package var description: String { "\(name) [\(variant)]" }

    /// Whether the manifest expects a launch (rather than a launch error).
    package var launches: Bool {
        if case .result = expectation { true } else { false }
    }

    /// A copy of the app bundle and its root under a fresh scratch directory, to damage.
    package func scratchCopy() throws -> FixtureApp {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("dyld3-app-\(UUID().uuidString)")
        let variantDirectory = scratch.appendingPathComponent(variant)
        try FileManager.default.createDirectory(at: variantDirectory, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: bundle, toPath: variantDirectory.appendingPathComponent("\(name).app").path)
        try FileManager.default.copyItem(atPath: root, toPath: variantDirectory.appendingPathComponent("root").path)
        return try FixtureApp(name: name, variant: variant, directory: scratch,
                              manifest: Data(contentsOf: URL(fileURLWithPath: bundle + "/manifest.json")))
    }

    /// The manifest name of the image at `path`.
    package func imageName(_ path: String) -> String {
        if path == executable { return name }
        return imagePaths.first(where: { path.hasSuffix("/" + $0.path) || path.hasSuffix($0.path) && $0.path.hasPrefix("/") })?.name ?? path
    }

    /// One fixture app by name and variant; fails loudly when the fixtures are not built.
    package static func named(_ name: String, _ variant: String = "x86_64-chained") throws -> FixtureApp {
        guard let app = try all().first(where: { $0.name == name && $0.variant == variant }) else {
            throw FixtureError("no fixture app \(name) [\(variant)]")
        }
        return app
    }

    /// Every app in every variant; fails loudly if the fixtures are not built.
    package static func all() throws -> [FixtureApp] {
        let sources = Paths.repoRoot.appendingPathComponent("Fixtures/apps")
        let names = try FileManager.default.contentsOfDirectory(atPath: sources.path).sorted()
        var apps: [FixtureApp] = []
        for variant in variants {
            for name in names {
                let manifestURL = buildDirectory.appendingPathComponent("\(variant)/\(name).app/manifest.json")
                guard let data = FileManager.default.contents(atPath: manifestURL.path) else {
                    throw FixtureError("\(manifestURL.path) is missing: run tools/build-fixtures (make fixtures)")
                }
                apps.append(try FixtureApp(name: name, variant: variant, directory: buildDirectory, manifest: data))
            }
        }
        return apps
    }

    package init(name: String, variant: String, directory: URL, manifest: Data) throws {
        guard let object = try JSONSerialization.jsonObject(with: manifest) as? [String: Any],
              let expect = object["expect"] as? [String: Any],
              let images = object["images"] as? [[String: Any]] else {
            throw FixtureError("\(name): manifest has no expect or images")
        }
        self.name = name
        self.variant = variant
        self.directory = directory
        imagePaths = images.compactMap { image in
            guard let imageName = image["name"] as? String, let path = image["path"] as? String else { return nil }
            return (imageName, path)
        }
        if let dlopen = object["dlopen"] as? [String: Any] {
            guard let path = dlopen["path"] as? String, let image = dlopen["image"] as? String, let order = dlopen["initOrder"] as? [String] else {
                throw FixtureError("\(name): manifest's dlopen needs path, image and initOrder")
            }
            self.dlopen = Dlopen(path: path, image: image, initOrder: order)
        } else {
            dlopen = nil
        }
        if let error = expect["error"] as? [String: String] {
            switch error["kind"] {
            case "missingSymbol":
                expectation = .missingSymbol(symbol: error["symbol"] ?? "", image: error["image"] ?? "", library: error["library"] ?? "")
            case "missingDylib":
                expectation = .missingDylib(image: error["image"] ?? "", installName: error["installName"] ?? "")
            default:
                throw FixtureError("\(name): unknown expected error \(error)")
            }
        } else if let result = expect["result"] as? NSNumber {
            expectation = .result(result.int32Value, initOrder: expect["initOrder"] as? [String])
        } else {
            throw FixtureError("\(name): manifest expects nothing")
        }
    }
}

package struct FixtureError: Error, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}
