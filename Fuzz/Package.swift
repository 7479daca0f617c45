// swift-tools-version: 6.1
import Foundation
import PackageDescription

// libFuzzer targets, built by tools/fuzz with `-sanitize=fuzzer,address`. A separate package
// so the main build never carries sanitizer flags.
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

let package = Package(
    name: "dyld3-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(path: "..")],
    targets: [
        // libFuzzer's driver, shared by the targets.
        .target(name: "FuzzDriver", packageAccess: false, swiftSettings: [.unsafeFlags(memberOfRootPackage)]),
        .executableTarget(
            name: "FuzzMachOReader",
            dependencies: [
                "FuzzDriver",
                .product(name: "MachOReader", package: rootPackage),
                .product(name: "MachOInspect", package: rootPackage),
            ],
            packageAccess: false,
            swiftSettings: [.unsafeFlags(["-parse-as-library"] + memberOfRootPackage)]),
        // Structure-aware closure mutations (decode, change a field, re-encode).
        .target(
            name: "ClosureMutation",
            dependencies: [
                .product(name: "ClosureFormat", package: rootPackage),
                .product(name: "LaunchPlan", package: rootPackage),
                .product(name: "MachOReader", package: rootPackage),
            ],
            packageAccess: false,
            swiftSettings: [.unsafeFlags(memberOfRootPackage)]),
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
            packageAccess: false,
            swiftSettings: [.unsafeFlags(["-parse-as-library"] + memberOfRootPackage)]),
        .executableTarget(
            name: "FuzzClosureReader",
            dependencies: ["FuzzDriver", .product(name: "ClosureFormat", package: rootPackage)],
            packageAccess: false,
            swiftSettings: [.unsafeFlags(["-parse-as-library"] + memberOfRootPackage)]),
    ]
)
