import MachOReader

/// `--deps`: the image's id, its dependent dylibs with their link kinds and versions (as
/// `otool -L` shows them), and its rpaths.
enum DependenciesTable {
    static func write<Output: TextOutputStream>(_ image: MachOImage, to out: inout Output) {
        out.write("Dependencies:\n")
        if let id = image.id { out.write("  id       \(id.installName)\n") }
        for (index, dependency) in image.dependencies.enumerated() {
            let versions = "compatibility version \(dependency.command.compatibilityVersion.versionString), "
                + "current version \(dependency.command.currentVersion.versionString)"
            out.write("  \(Text.pad(String(index + 1), 3)) \(Text.pad(dependency.kind.rawValue, 8)) \(dependency.installName) (\(versions))\n")
        }
        for rpath in image.rpaths { out.write("  rpath    \(rpath)\n") }
    }
}
