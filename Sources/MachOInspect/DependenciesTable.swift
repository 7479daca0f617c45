import MachOReader

/// `--deps`: the image's id, its dependent dylibs with their link kinds, and its rpaths.
enum DependenciesTable {
    static func render(_ image: MachOImage) -> String {
        var out = "Dependencies:\n"
        if let id = image.id {
            out += "  id       \(id.installName)\n"
        }
        for (index, dependency) in image.dependencies.enumerated() {
            out += "  \(pad(String(index + 1), 3)) \(pad(dependency.kind.rawValue, 8)) \(dependency.installName)\n"
        }
        for rpath in image.rpaths {
            out += "  rpath    \(rpath)\n"
        }
        return out
    }

    private static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }
}
