// swift-tools-version: 6.1
import Foundation
import PackageDescription

// libFuzzer targets, built by tools/fuzz with `-sanitize=fuzzer,address`. A separate package
// so the main build never carries sanitizer flags.
let rootPackage = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().lastPathComponent

let package = Package(
    name: "dyld3-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(path: "..")],
    targets: [
        // libFuzzer's driver, shared by the targets.
        .target(name: "FuzzDriver"),
        .executableTarget(
            name: "FuzzMachOReader",
            dependencies: [
                "FuzzDriver",
                .product(name: "MachOReader", package: rootPackage),
                .product(name: "MachOInspect", package: rootPackage),
            ],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]),
        // Structure-aware closure mutations (decode, change a field, re-encode).
        .target(
            name: "ClosureMutation",
            dependencies: [
                .product(name: "ClosureFormat", package: rootPackage),
                .product(name: "LaunchPlan", package: rootPackage),
                .product(name: "MachOReader", package: rootPackage),
            ]),
        .executableTarget(
            name: "FuzzClosureLaunch",
            dependencies: [
                "FuzzDriver", "ClosureMutation",
                .product(name: "Dyld3", package: rootPackage),
                .product(name: "ClosureFormat", package: rootPackage),
                .product(name: "ClosureCache", package: rootPackage),
                .product(name: "LaunchPlan", package: rootPackage),
                .product(name: "LoaderCore", package: rootPackage),
            ],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]),
        .executableTarget(
            name: "FuzzClosureReader",
            dependencies: ["FuzzDriver", .product(name: "ClosureFormat", package: rootPackage)],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]),
    ]
)
