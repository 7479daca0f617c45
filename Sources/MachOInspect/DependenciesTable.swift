import MachOReader

/// `--deps`: the image's id, its dependent dylibs with their link kinds, and its rpaths.
enum DependenciesTable {
    static func render(_ image: MachOImage) -> String {
        var out = "Dependencies:\n"
        if let id = image.id {
            out += "  id       \(id.installName)\n"
        }
        for (index, dependency) in image.dependencies.enumerated() {
            out += "  \(Text.pad(String(index + 1), 3)) \(Text.pad(dependency.kind.rawValue, 8)) \(dependency.installName)\n"
        }
        for rpath in image.rpaths {
            out += "  rpath    \(rpath)\n"
        }
        return out
    }
}
