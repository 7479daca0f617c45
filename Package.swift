// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "dyld3",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "dyld3", targets: ["Dyld3Tool"]),
        .library(name: "MachOReader", targets: ["MachOReader"]),
        .library(name: "MachOInspect", targets: ["MachOInspect"]),
        .library(name: "LaunchClosure", targets: ["LaunchClosure"]),
        .library(name: "ClosureBuild", targets: ["ClosureBuild"]),
        .library(name: "LoaderCore", targets: ["LoaderCore"]),
        .library(name: "Dyld3", targets: ["Dyld3"]),
        .library(name: "Dyld2", targets: ["Dyld2"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        // Ed25519 signatures of closure caches that travel (`key generate`, `install --sign`, `--trust`).
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/swiftlang/swift-subprocess", from: "1.0.2"),
        .package(url: "https://github.com/apple/swift-system", from: "1.5.0"),
    ],
    targets: [
        // The pipeline, bottom to top (docs/design.md draws it; tools/check-module-graph keeps
        // this list and that picture the same).
        // Parses Mach-O bytes. No I/O, no process state.
        .target(name: "MachOReader"),
        // Renders what the reader found: llvm-objdump-compatible tables and JSON.
        .target(name: "MachOInspect", dependencies: ["MachOReader"]),
        // What both launch paths share: files, path resolution, the dependency graph,
        // mapping, initializer order and discovery, the launch request and its last step.
        .target(name: "LoaderCore", dependencies: [
            "MachOReader", "CXXHash", "CUserfault", .product(name: "SystemPackage", package: "swift-system"),
        ]),
        // The dyld2 slow path: parse, resolve, look up by name, on every launch.
        .target(name: "Dyld2", dependencies: ["LoaderCore", "MachOReader"]),
        // Launch closures: the format, the cache, image identity, verification. Resolves nothing.
        .target(name: "LaunchClosure", dependencies: [
            "LoaderCore", "MachOReader", "CZstd", .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "SystemPackage", package: "swift-system"),
        ]),
        // Install time: the slow path's resolution written down as a closure.
        .target(name: "ClosureBuild", dependencies: ["Dyld2", "LaunchClosure", "LoaderCore", "MachOReader"]),
        // The dyld3 fast path: validate a closure and apply it. Cannot see the slow path.
        .target(name: "Dyld3", dependencies: ["LaunchClosure", "LoaderCore"]),
        // `dyld3 compare`: both paths at one slide, memory and fixups side by side.
        .target(name: "LaunchComparison", dependencies: ["Dyld2", "Dyld3", "LaunchClosure", "LoaderCore", "MachOReader"]),
        // The one way the project starts other programs (tools, the glibc harness, `dyld3` in
        // tests): swift-subprocess behind a small async API.
        .target(
            name: "ProcessRunner",
            dependencies: [
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        // `dyld3 bench`: dyld2 vs dyld3 vs the mapping floor vs glibc's loader, with charts.
        .target(name: "LaunchBench", dependencies: ["ClosureBuild", "Dyld2", "Dyld3", "LaunchClosure", "LoaderCore", "MachOReader", "ProcessRunner"]),
        // Stub system roots: stub dylibs and a stub host for real Apple-built binaries.
        .target(name: "StubRoot", dependencies: ["MachOReader", "LoaderCore", "ProcessRunner"]),
        // System libraries, found through pkg-config.
        .systemLibrary(name: "CZstd", pkgConfig: "libzstd", providers: [.apt(["libzstd-dev"])]),
        .systemLibrary(name: "CXXHash", pkgConfig: "libxxhash", providers: [.apt(["libxxhash-dev"])]),
        // The userfaultfd system call and ioctls for page-in linking (kernel headers only).
        .systemLibrary(name: "CUserfault"),
        // The `dyld3` command line.
        .executableTarget(
            name: "Dyld3Tool",
            dependencies: [
                "MachOReader", "MachOInspect", "LoaderCore", "Dyld2", "LaunchClosure", "ClosureBuild", "Dyld3",
                "LaunchComparison", "StubRoot", "LaunchBench",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Sources/dyld3"
        ),
        // Shared by the test targets: the llvm-objdump oracle, the corpus, the fixtures.
        .target(name: "TestSupport", dependencies: ["MachOReader", "MachOInspect", "LaunchClosure", "ClosureBuild", "ProcessRunner"], path: "Tests/TestSupport"),
        .testTarget(name: "MachOReaderTests", dependencies: ["MachOReader", "MachOInspect", "TestSupport"]),
        .testTarget(name: "LoaderTests", dependencies: [
            "Dyld2", "Dyld3", "ClosureBuild", "LaunchComparison", "LaunchClosure", "LoaderCore", "MachOReader", "ProcessRunner", "StubRoot",
            "TestSupport",
        ]),
        .testTarget(name: "StubRootTests", dependencies: ["StubRoot", "LoaderCore", "MachOReader", "MachOInspect", "ProcessRunner", "TestSupport"]),
        .testTarget(name: "SystemLibraryTests", dependencies: ["CZstd", "CXXHash"]),
        .testTarget(name: "BenchTests", dependencies: ["LaunchBench", "ProcessRunner", "ClosureBuild", "Dyld3", "LaunchClosure", "LoaderCore", "TestSupport"]),
        .testTarget(name: "ClosureTests", dependencies: ["LaunchClosure", "ClosureBuild", "Dyld2", "LoaderCore", "MachOReader", "TestSupport"]),
        // Tampered and forged closures, concurrent installs, stale images, cache hygiene.
        .testTarget(name: "HostileTests", dependencies: ["LaunchClosure", "ClosureBuild", "Dyld2", "Dyld3", "LoaderCore", "MachOReader", "ProcessRunner", "TestSupport"]),
    ]
)
