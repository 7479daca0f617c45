import LaunchPlan
import LoaderCore
import MachOReader

/// The platform a stub root's files are built for: the platform of the binaries it serves,
/// read from their `LC_BUILD_VERSION` (or `LC_VERSION_MIN_*`). An image without either is
/// taken for macOS, as ld64 and dyld do for old binaries.
package enum StubPlatform: String, Equatable, Sendable {
    case macOS = "macos"
    case iOS = "ios"
    case iOSSimulator = "ios-simulator"

    /// `PLATFORM_MACOS`, `PLATFORM_IOS`, `PLATFORM_IOSSIMULATOR` (mach-o/loader.h).
    init?(buildVersionPlatform platform: UInt32) {
        switch platform {
        case 1: self = .macOS
        case 2: self = .iOS
        case 7: self = .iOSSimulator
        default: return nil
        }
    }

    /// The platform of `image` (the `arch` slice of `binary`); a platform stub roots are not
    /// built for (tvOS, watchOS, ...) is refused. `LC_VERSION_MIN_IPHONEOS` on x86 is the simulator.
    static func of(_ image: MachOImage, binary: String, arch: String) throws(CommandFailure) -> StubPlatform {
        if let version = image.buildVersion {
            guard let platform = StubPlatform(buildVersionPlatform: version.platform) else {
                throw .unsupportedPlatform(binary: binary, arch: arch, platform: "LC_BUILD_VERSION platform \(version.platform)")
            }
            return platform
        }
        switch image.versionMin?.type {
        case nil, .some(.versionMinMacOSX): return .macOS
        case .some(.versionMinIPhoneOS): return image.header.cpu.type & ~CPUType.abi64 == CPUType.x86Type ? .iOSSimulator : .iOS
        case let .some(other): throw .unsupportedPlatform(binary: binary, arch: arch, platform: other.description)
        }
    }

    /// Whether an app of this platform is laid out the iOS way (`App.app/App`, frameworks in
    /// `App.app/Frameworks`) rather than the macOS way (`App.app/Contents/MacOS/App`,
    /// frameworks in `App.app/Contents/Frameworks`).
    var hasFlatBundle: Bool { self != .macOS }

    /// The deployment target stubs are built for: macOS uses the toolchain's, iOS 14.0
    /// (the first version whose dyld reads every fixup format the corpus uses).
    func minimumOS(_ toolchain: StubToolchain) -> String {
        self == .macOS ? toolchain.minimumOS : "14.0"
    }

    /// clang's `-target` for `arch`.
    func clangTarget(arch: String, minimumOS: String) -> String {
        "\(arch)-apple-\(self == .macOS ? "macos" : "ios")\(minimumOS)" + (self == .iOSSimulator ? "-simulator" : "")
    }
}

/// The app bundle a stub root lays its host out as, when the binaries link frameworks the
/// app would ship (`@rpath/...`, `@executable_path/...`) that exist nowhere: the host is
/// the app's executable, and its `LC_RPATH` points at the bundle's `Frameworks` directory,
/// where those frameworks' stubs go.
package struct StubAppLayout: Equatable, Sendable {
    /// The host executable's path.
    package let hostPath: String
    /// The `LC_RPATH` the host carries: `@executable_path/Frameworks` (iOS) or
    /// `@executable_path/../Frameworks` (macOS).
    package let hostRPath: String

    package init(root: String, platform: StubPlatform) {
        let candidates = LaunchRoots.hostCandidates(root: root)
        (hostPath, hostRPath) = platform.hasFlatBundle
            ? (candidates[0], "@executable_path/Frameworks") : (candidates[1], "@executable_path/../Frameworks")
    }
}
