import Foundation

/// One size's inputs: the generated Mach-O app and its ELF twin (both from
/// `tools/gen-app --seed 1`), generated once and reused from `bench-apps/`. An Objective-C
/// app (``BenchConfiguration/objc``) has its own directory and shares the C-only twin.
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
    /// Where one layout of the twin keeps its executable (`tools/gen-app --elf` writes both).
    func elfExecutableDirectory(_ layout: ELFLayout) -> String {
        switch layout {
        case .perFrameworkDirectories: "\(elfDirectory)/\(name).app"
        case .oneDirectory: "\(elfDirectory)/one-dir"
        }
    }

    /// A copy of the layout's executable that glibc's `dlopen` accepts (DF_1_PIE cleared),
    /// next to the executable so that its runpath (absolute, or `$ORIGIN`) still applies.
    func elfLoadRoot(_ layout: ELFLayout) -> String { "\(elfExecutableDirectory(layout))/\(name).dlopen.so" }

    /// The prefix of every file glibc maps for this layout (for the harness's dirty-page count).
    func elfPrefix(_ layout: ELFLayout) -> String {
        switch layout {
        case .perFrameworkDirectories: elfDirectory + "/"
        case .oneDirectory: elfExecutableDirectory(.oneDirectory) + "/"
        }
    }

    /// Generates whatever is missing for `dylibs` frameworks; `log` gets one line per build.
    static func prepare(dylibs: Int, configuration: BenchConfiguration, log: (String) -> Void) async throws(BenchError) -> BenchApp {
        let apps = configuration.workDirectory + "/bench-apps"
        let app = BenchApp(dylibs: dylibs,
                           machODirectory: "\(apps)/\(dylibs)-\(configuration.arch)-\(configuration.style)\(configuration.objc?.directorySuffix ?? "")",
                           elfDirectory: "\(apps)/\(dylibs)-elf")
        let generator = configuration.repositoryRoot + "/tools/gen-app"
        let base = [generator, "--dylibs", "\(dylibs)", "--seed", "\(BenchConfiguration.seed)", "--jobs", "2"]
        try await generate(app.machODirectory, base + ["--arch", configuration.arch, "--style", configuration.style]
                           + (configuration.objc?.generatorArguments ?? []), log: log)
        // A twin generated before gen-app wrote the one-directory layout is generated again.
        try await generate(app.elfDirectory, base + ["--elf"], expecting: app.elfExecutableDirectory(.oneDirectory) + "/" + app.name, log: log)
        for layout in ELFLayout.allCases {
            let twin = app.elfExecutableDirectory(layout) + "/" + app.name
            guard let bytes = FileManager.default.contents(atPath: twin) else { throw .failed("\(twin): cannot be read") }
            let patched = try ELFDynamic.clearingPIE(Array(bytes), path: twin)
            guard FileManager.default.createFile(atPath: app.elfLoadRoot(layout), contents: Data(patched)) else {
                throw .failed("\(app.elfLoadRoot(layout)): cannot be written")
            }
        }
        return app
    }

    /// Runs `gen-app` into `directory` unless a finished build is there (marked `.complete`,
    /// and holding `expecting` when given).
    private static func generate(_ directory: String, _ arguments: [String], expecting: String? = nil,
                                 log: (String) -> Void) async throws(BenchError) {
        let marker = directory + "/.complete"
        if FileManager.default.fileExists(atPath: marker), expecting.map(FileManager.default.fileExists(atPath:)) ?? true { return }
        try? FileManager.default.removeItem(atPath: marker)
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let line = try await BenchTool.run(arguments + ["--out", directory], stderrPath: directory + "/.gen-app.stderr")
        log(line)
        _ = FileManager.default.createFile(atPath: marker, contents: Data())
    }

    /// Every ELF file glibc loads in `layout`: the dlopen root and the shared objects (not
    /// the PIE executable, which the bench never loads).
    func elfFiles(_ layout: ELFLayout) -> [String] {
        let top = layout == .oneDirectory ? elfExecutableDirectory(.oneDirectory) : elfDirectory
        let files = (FileManager.default.enumerator(atPath: top)?.allObjects as? [String] ?? [])
            .filter { !$0.hasPrefix("src/") && !$0.hasPrefix("one-dir/") && $0 != "one-dir" && !$0.hasPrefix(".")
                && !$0.hasSuffix(".json") && $0 != "\(name).app/\(name)" && $0 != name }
        return files.map { top + "/" + $0 }.filter { path in
            guard let handle = FileHandle(forReadingAtPath: path) else { return false }
            defer { try? handle.close() }
            return (try? handle.read(upToCount: 4)).map { $0.elementsEqual([0x7f, 0x45, 0x4c, 0x46]) } ?? false
        }.sorted()
    }

    /// The ELF files glibc loads (per-framework layout; the other layout has the same
    /// objects) and the relocations it applies.
    func elfRelocationCount() throws(BenchError) -> (images: Int, relocations: Int) {
        var images = 0, relocations = 0
        for path in elfFiles(.perFrameworkDirectories) {
            guard let data = FileManager.default.contents(atPath: path) else { throw .failed("\(path): cannot be read") }
            images += 1
            relocations += try ELFDynamic(Array(data), path: path).relocationCount
        }
        return (images, relocations)
    }
}

/// The two layouts `tools/gen-app --elf` gives the twin.
enum ELFLayout: CaseIterable {
    /// Like the Mach-O bundle: each framework in its own directory, each object's DT_RUNPATH
    /// listing the directory of every dependency (how `@rpath` maps onto ELF).
    case perFrameworkDirectories
    /// As ELF projects ship: every object in one directory, DT_RUNPATH the one entry `$ORIGIN`.
    case oneDirectory

    /// The glibc path that loads this layout.
    var path: LaunchPath { self == .oneDirectory ? .glibcOneDir : .glibc }
}
