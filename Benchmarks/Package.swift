// swift-tools-version: 6.1
import Foundation
import PackageDescription

// SwiftPM names a path dependency after its directory, which differs between checkouts.
let rootPackage = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().lastPathComponent

// The targets here use the main package's `package` declarations: they compile as members
// of that package (`-package-name`, its identity as SwiftPM spells it for the compiler), and
// so they turn off their own package access (SwiftPM would pass this package's name).
let rootPackageName: String = {
    var name = String(rootPackage.lowercased().map { $0.isLetter || $0.isNumber || $0 == "_" ? $0 : "_" })
    if name.first?.isNumber ?? true { name = "_" + name }
    return name
}()
let memberOfRootPackage: [String] = ["-package-name", rootPackageName]

// Micro benchmarks (ordo-one/package-benchmark). A separate package so that the main
// build and `make test` never compile the benchmark framework.
let package = Package(
    name: "dyld3-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "InspectBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "MachOReader", package: rootPackage),
                .product(name: "ClosureFormat", package: rootPackage),
                .product(name: "ClosureCache", package: rootPackage),
                .product(name: "ClosureBuild", package: rootPackage),
                .product(name: "Dyld3", package: rootPackage),
                .product(name: "LaunchPlan", package: rootPackage),
                .product(name: "LoaderCore", package: rootPackage),
                .product(name: "LaunchMemory", package: rootPackage),
                .product(name: "Dyld2", package: rootPackage),
            ],
            path: "InspectBenchmarks",
            packageAccess: false,
            swiftSettings: [.unsafeFlags(memberOfRootPackage)],
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ]
)
