import Foundation

/// One size's inputs: the generated Mach-O app and its ELF twin (both from
/// `tools/gen-app --seed 1`), generated once and reused from `bench-apps/`.
struct BenchApp {
    let dylibs: Int
    /// `gen-app --out` of the Mach-O app and of the ELF twin.
    let machODirectory: String
    let elfDirectory: String

    var name: String { "gen\(dylibs)" }
    /// The app's main executable (the launch root).
    var mainImage: String { "\(machODirectory)/\(name).app/\(name)" }
    /// The app's system root (our libSystem).
    var systemRoot: String { machODirectory + "/root" }
    /// A copy of the twin's executable that glibc's `dlopen` accepts (DF_1_PIE cleared).
    var elfLoadRoot: String { "\(elfDirectory)/\(name).app/\(name).dlopen.so" }

    /// Generates whatever is missing for `dylibs` frameworks; `log` gets one line per build.
    static func prepare(dylibs: Int, configuration: BenchConfiguration, log: (String) -> Void) async throws(BenchError) -> BenchApp {
        let apps = configuration.workDirectory + "/bench-apps"
        let app = BenchApp(dylibs: dylibs,
                           machODirectory: "\(apps)/\(dylibs)-\(configuration.arch)-\(configuration.style)",
                           elfDirectory: "\(apps)/\(dylibs)-elf")
        let generator = configuration.repositoryRoot + "/tools/gen-app"
        let base = [generator, "--dylibs", "\(dylibs)", "--seed", "\(BenchConfiguration.seed)", "--jobs", "2"]
        try await generate(app.machODirectory, base + ["--arch", configuration.arch, "--style", configuration.style], log: log)
        try await generate(app.elfDirectory, base + ["--elf"], log: log)
        let twin = "\(app.elfDirectory)/\(app.name).app/\(app.name)"
        guard let bytes = FileManager.default.contents(atPath: twin) else { throw .failed("\(twin): cannot be read") }
        let patched = try ELFDynamic.clearingPIE(Array(bytes), path: twin)
        guard FileManager.default.createFile(atPath: app.elfLoadRoot, contents: Data(patched)) else {
            throw .failed("\(app.elfLoadRoot): cannot be written")
        }
        return app
    }

    /// Runs `gen-app` into `directory` unless a finished build is there (marked `.complete`).
    private static func generate(_ directory: String, _ arguments: [String], log: (String) -> Void) async throws(BenchError) {
        let marker = directory + "/.complete"
        if FileManager.default.fileExists(atPath: marker) { return }
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let line = try await BenchTool.run(arguments + ["--out", directory], stderrPath: directory + "/.gen-app.stderr")
        log(line)
        _ = FileManager.default.createFile(atPath: marker, contents: Data())
    }

    /// Every ELF file of the twin that glibc loads, and the relocations it applies.
    func elfRelocationCount() throws(BenchError) -> (images: Int, relocations: Int) {
        var images = 0, relocations = 0
        let files = (FileManager.default.enumerator(atPath: elfDirectory)?.allObjects as? [String] ?? [])
            .filter { !$0.hasPrefix("src/") && !$0.hasPrefix(".") && !$0.hasSuffix(".json") && $0 != "\(name).app/\(name)" }
        for file in files {
            let path = elfDirectory + "/" + file
            guard let data = FileManager.default.contents(atPath: path), data.count > 64,
                  data.prefix(4).elementsEqual([0x7f, 0x45, 0x4c, 0x46]) else { continue }
            images += 1
            relocations += try ELFDynamic(Array(data), path: path).relocationCount
        }
        return (images, relocations)
    }
}
