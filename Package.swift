// swift-tools-version: 6.2
import PackageDescription

/// Swift's strict memory safety checking, its findings errors: every use of an unsafe construct
/// is marked `unsafe` (and lives in an `Unsafe*` file), so the compiler shows where memory
/// safety rests on us.
let strictMemorySafety: [SwiftSetting] = [.strictMemorySafety(), .treatWarning("StrictMemorySafety", as: .error)]

let package = Package(
    name: "dyld3",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "dyld3", targets: ["Dyld3Tool"]),
        .library(name: "MachOReader", targets: ["MachOReader"]),
        .library(name: "MachOInspect", targets: ["MachOInspect"]),
        .library(name: "LaunchPlan", targets: ["LaunchPlan"]),
        .library(name: "ClosureFormat", targets: ["ClosureFormat"]),
        .library(name: "ClosureCache", targets: ["ClosureCache"]),
        .library(name: "ClosureBuild", targets: ["ClosureBuild"]),
        .library(name: "SharedCache", targets: ["SharedCache"]),
        .library(name: "SharedCacheBuild", targets: ["SharedCacheBuild"]),
        .library(name: "LoaderSystem", targets: ["LoaderSystem"]),
        .library(name: "Pager", targets: ["Pager"]),
        .library(name: "LaunchMemory", targets: ["LaunchMemory"]),
        .library(name: "RuntimeServices", targets: ["RuntimeServices"]),
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
        // Parses Mach-O bytes. No I/O, no process state. Crypto hashes code-signature pages.
        .target(name: "MachOReader", dependencies: [.product(name: "Crypto", package: "swift-crypto")]),
        // Renders what the reader found: llvm-objdump-compatible tables and JSON.
        .target(name: "MachOInspect", dependencies: ["MachOReader"]),
        // What a launch does, as plain values every stage shares: mapping plans, resolved
        // fixups and their faults, a failed system call, the content hash. No I/O.
        .target(name: "LaunchPlan", dependencies: [
            "MachOReader", "CXXHash", .product(name: "SystemPackage", package: "swift-system"),
        ]),
        // The loader's contact with the kernel: the open descriptors of the images it maps
        // (identity, reads, read-ahead) and their hand-off between threads, system calls
        // retried on EINTR, raw memory (reserve, map, protect, load and store).
        .target(name: "LoaderSystem", dependencies: [
            "MachOReader", "LaunchPlan", "CXXHash", .product(name: "SystemPackage", package: "swift-system"),
        ]),
        // Page-in linking: the userfaultfd pager that fills each page with its fixups on
        // first touch, and checks each page it fills against its code slot.
        .target(name: "Pager", dependencies: [
            "LoaderSystem", "LaunchPlan", "MachOReader", "CUserfault", "CPageIn", .product(name: "SystemPackage", package: "swift-system"),
        ]),
        // A launch's memory: images mapped into one region (or a prelinked set mapped whole),
        // their protections, the checked writers fixups are stored through.
        .target(name: "LaunchMemory", dependencies: ["LoaderSystem", "Pager", "LaunchPlan", "MachOReader"]),
        // What code a launch runs calls back into: thread-local variables, `dlopen` and its
        // family, the host services table; kept with the launch's memory, released with it.
        .target(name: "RuntimeServices", dependencies: ["LaunchMemory", "LaunchPlan", "MachOReader", "CThreadLocal", "CHostServices"]),
        // What both launch paths share above the memory: files and path resolution, the
        // dependency graph, initializer order and discovery, the launch request, its report,
        // its digest and its last step.
        .target(name: "LoaderCore", dependencies: [
            "LoaderSystem", "Pager", "LaunchMemory", "RuntimeServices", "MachOReader", "LaunchPlan",
        ]),
        // The dyld2 slow path: parse, resolve, look up by name, on every launch.
        .target(name: "Dyld2", dependencies: ["LoaderCore", "LaunchMemory", "RuntimeServices", "LaunchPlan", "MachOReader", "SharedCache", "ClosureFormat"]),
        // The closure format: records, encode, decode, the fixup-run walker, the checks that
        // need no file system. Maps no memory and opens no file.
        .target(name: "ClosureFormat", dependencies: [
            "LaunchPlan", "MachOReader", "CZstd", .product(name: "Crypto", package: "swift-crypto"),
        ]),
        // Closures on disk: files read and written, ownership, keys, the cache, image
        // identity, verification, the dump. Resolves nothing.
        .target(name: "ClosureCache", dependencies: [
            "ClosureFormat", "LaunchPlan", "LoaderCore", "LoaderSystem", "LaunchMemory", "MachOReader", .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "SystemPackage", package: "swift-system"),
        ]),
        // Install time: the slow path's resolution written down as a closure.
        .target(name: "ClosureBuild", dependencies: ["Dyld2", "ClosureFormat", "ClosureCache", "LaunchPlan", "LoaderCore", "LaunchMemory", "RuntimeServices", "MachOReader"]),
        // The dyld shared cache in Apple's format: its tables read and written, and its build from a root.
        .target(name: "SharedCache", dependencies: [
            "ClosureCache", "ClosureFormat", "LaunchMemory", "LaunchPlan", "LoaderCore", "LoaderSystem", "MachOReader",
            .product(name: "Crypto", package: "swift-crypto"),
        ]),
        // `dyld3 shared-cache build`, `inspect` of a cache, and binding closures into a cache.
        .target(name: "SharedCacheBuild", dependencies: [
            "SharedCache", "ClosureBuild", "ClosureCache", "ClosureFormat", "LaunchMemory", "LaunchPlan", "LoaderCore", "LoaderSystem",
            "MachOInspect", "MachOReader", .product(name: "Crypto", package: "swift-crypto"),
        ]),
        // The dyld3 fast path: read a closure (on two cores when it is large), check it and
        // apply it, eagerly or page by page. Cannot see the slow path.
        .target(name: "Dyld3", dependencies: [
            "ClosureFormat", "ClosureCache", "LaunchPlan", "LoaderCore", "LoaderSystem", "Pager", "LaunchMemory", "RuntimeServices", "MachOReader",
            "SharedCache",
        ]),
        // `dyld3 compare`: both paths at one slide, memory and fixups side by side.
        .target(name: "LaunchComparison", dependencies: [
            "ClosureFormat", "Dyld2", "Dyld3", "ClosureCache", "LaunchPlan", "LoaderCore", "LaunchMemory", "RuntimeServices", "MachOReader",
            "SharedCache",
        ]),
        // The one way the project starts other programs (tools, the glibc harness, `dyld3` in
        // tests): swift-subprocess behind a small async API.
        .target(
            name: "ProcessRunner",
            dependencies: [
                "LaunchPlan",
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        // `dyld3 bench`: dyld2 vs dyld3 vs the mapping floor vs glibc's loader, with charts.
        .target(name: "LaunchBench", dependencies: [
            "ClosureBuild", "ClosureFormat", "Dyld2", "Dyld3", "ClosureCache", "LaunchPlan", "LoaderCore", "LoaderSystem", "Pager", "LaunchMemory",
            "MachOReader", "ProcessRunner", "SharedCache", "SharedCacheBuild",
        ]),
        // Stub system roots: stub dylibs and a stub host for real Apple-built binaries.
        .target(name: "StubRoot", dependencies: ["MachOReader", "LaunchPlan", "LoaderCore", "ProcessRunner"]),
        // System libraries, found through pkg-config.
        .systemLibrary(name: "CZstd", pkgConfig: "libzstd", providers: [.apt(["libzstd-dev"])]),
        .systemLibrary(name: "CXXHash", pkgConfig: "libxxhash", providers: [.apt(["libxxhash-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // App bundles and .ipa archives (a bounded zip reader: stored and deflate).
        .target(name: "AppArchive", dependencies: ["CZlib", "CUnpack", "MachOReader"]),
        // openat2 and renameat2 for the unpacker (kernel headers only).
        .systemLibrary(name: "CUnpack"),
        // The userfaultfd system call and ioctls for page-in linking (kernel headers only).
        .systemLibrary(name: "CUserfault"),
        // Page-in's SIGBUS handler and its registry of live regions: C, because it runs in a
        // signal handler and keeps process-wide state.
        .target(name: "CPageIn"),
        // Thread-local variables of the images a launch runs: the TLV thunk, in assembly,
        // its keys and per-thread blocks.
        .target(name: "CThreadLocal"),
        // The host services the project's libSystem calls: threads, and `dlopen` and its
        // family handed to the loader registered for the calling launch.
        .target(name: "CHostServices"),
        // The `dyld3` command line.
        .executableTarget(
            name: "Dyld3Tool",
            dependencies: [
                "MachOReader", "MachOInspect", "LaunchPlan", "LoaderCore", "LoaderSystem", "Pager", "RuntimeServices", "Dyld2", "ClosureFormat",
                "ClosureCache", "ClosureBuild", "Dyld3",
                "LaunchComparison", "StubRoot", "LaunchBench", "AppArchive", "SharedCache", "SharedCacheBuild",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // Shared by the test targets: the llvm-objdump oracle, the corpus, the fixtures.
        .target(name: "TestSupport", dependencies: [
            "MachOReader", "MachOInspect", "ClosureFormat", "ClosureCache", "ClosureBuild", "LoaderCore", "ProcessRunner",
            .product(name: "Crypto", package: "swift-crypto"),
        ], path: "Tests/TestSupport"),
        .testTarget(name: "MachOReaderTests", dependencies: ["MachOReader", "MachOInspect", "TestSupport"]),
        .testTarget(name: "LoaderTests", dependencies: [
            "Dyld2", "Dyld3", "ClosureBuild", "ClosureFormat", "LaunchComparison", "ClosureCache", "LaunchPlan", "LoaderCore", "LoaderSystem", "Pager",
            "LaunchMemory", "RuntimeServices", "MachOReader", "ProcessRunner", "SharedCache", "SharedCacheBuild", "StubRoot",
            "TestSupport",
        ]),
        .testTarget(name: "StubRootTests", dependencies: ["StubRoot", "LaunchPlan", "LoaderCore", "MachOReader", "MachOInspect", "ProcessRunner", "TestSupport"]),
        .testTarget(name: "SystemLibraryTests", dependencies: ["CZstd", "CXXHash", "TestSupport"]),
        .testTarget(name: "AppArchiveTests", dependencies: ["AppArchive", "MachOReader", "ProcessRunner", "StubRoot", "TestSupport"]),
        .testTarget(name: "BenchTests", dependencies: [
            "LaunchBench", "ProcessRunner", "ClosureBuild", "ClosureFormat", "Dyld3", "ClosureCache", "LaunchPlan", "LoaderCore", "LaunchMemory", "TestSupport",
        ]),
        .testTarget(name: "ClosureTests", dependencies: ["ClosureFormat", "ClosureCache", "ClosureBuild", "Dyld2", "Dyld3", "LaunchPlan", "LoaderCore", "MachOReader", "TestSupport"]),
        // Tampered and forged closures, concurrent installs, stale images, cache hygiene.
        .testTarget(name: "HostileTests", dependencies: [
            "ClosureFormat", "ClosureCache", "ClosureBuild", "Dyld2", "Dyld3", "LaunchPlan", "LoaderCore", "LoaderSystem", "Pager", "LaunchMemory", "MachOReader",
            "ProcessRunner", "TestSupport",
        ]),
    ]
)

// Every library and executable target of the pipeline is checked for strict memory safety.
for target in package.targets where [.regular, .executable].contains(target.type) && !["CPageIn", "CThreadLocal", "CHostServices"].contains(target.name) {
    target.swiftSettings = (target.swiftSettings ?? []) + strictMemorySafety
}

// A concrete generic type's metadata (`[ClosureImage]`, `Dictionary<String, Int>`) is fetched
// through its generic metadata accessor rather than by demangling its mangled name on first
// use: a fresh process's launch pays that demangling once per type, about a sixth of a fresh
// small launch (docs/performance.md).
for target in package.targets where [.regular, .executable].contains(target.type) && !["CPageIn", "CThreadLocal", "CHostServices"].contains(target.name) {
    target.swiftSettings = (target.swiftSettings ?? []) + [.unsafeFlags(["-Xfrontend", "-disable-concrete-type-metadata-mangled-name-accessors"])]
}

// A warning is a defect (one hid an `#expect` whose check was thrown away): every Swift
// target, tests included, fails to build on one.
for target in package.targets where target.type != .system && !["CPageIn", "CThreadLocal", "CHostServices"].contains(target.name) {
    target.swiftSettings = (target.swiftSettings ?? []) + [.treatAllWarnings(as: .error)]
}
