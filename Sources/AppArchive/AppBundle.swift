import Foundation
import MachOReader

/// Apps as users ship them: an app bundle directory (`X.app`, iOS or macOS layout) and an
/// `.ipa` archive (a zip holding `Payload/X.app`), unpacked into a work area.
package enum AppBundle {
    /// An `Info.plist` larger than this is not read.
    static let maxInfoPlistBytes = 1 << 20

    /// The main executable of the bundle directory `bundle` (`X.app`): the file its
    /// `Info.plist` names (`CFBundleExecutable`), else the bundle's own name, in
    /// `X.app/` (iOS) or `X.app/Contents/MacOS/` (macOS, whose `Info.plist` is in
    /// `Contents/`).
    package static func executable(of bundle: String) throws(MachOError) -> String {
        let name = (bundle as NSString).lastPathComponent
        guard name.hasSuffix(".app"), name.count > 4 else { throw .bundle(path: bundle, what: "is a directory but not a .app bundle") }
        let isMacOS = UnsafeFoundation.isDirectory(bundle + "/Contents/MacOS")
        let plist = isMacOS ? bundle + "/Contents/Info.plist" : bundle + "/Info.plist"
        let executable = try bundleExecutable(plist: plist) ?? String(name.dropLast(4))
        let path = (isMacOS ? bundle + "/Contents/MacOS/" : bundle + "/") + executable
        guard FileManager.default.fileExists(atPath: path), !UnsafeFoundation.isDirectory(path) else {
            throw .bundle(path: bundle, what: "has no executable \(executable) (looked for \(path))")
        }
        return path
    }

    /// `CFBundleExecutable` of the property list at `plist` (XML or binary); nil when the
    /// file does not exist or names none. The file is opened once without following a
    /// symbolic link, bounded by `fstat` of what was opened and read from that descriptor. A
    /// name that is not a plain file name is refused.
    static func bundleExecutable(plist: String) throws(MachOError) -> String? {
        let file: UnsafeFileAt.Descriptor
        switch UnsafeFileAt.open(plist, noFollow: true) {
        case let .success(opened): file = opened
        case .failure(ENOENT), .failure(ENOTDIR): return nil
        case .failure(ELOOP): throw .bundle(path: plist, what: "is a symbolic link, which is not followed: make it the file itself")
        case let .failure(errno): throw .io(path: plist, reason: "cannot read: \(UnsafeFileAt.describe(errno))")
        }
        let size: Int
        switch file.status() {
        case let .success(status) where status.isRegularFile: size = status.size
        case .success: throw .bundle(path: plist, what: "is not a regular file")
        case let .failure(errno): throw .io(path: plist, reason: "cannot examine: \(UnsafeFileAt.describe(errno))")
        }
        guard size <= maxInfoPlistBytes else { throw .bundle(path: plist, what: "is \(size) bytes, more than the \(maxInfoPlistBytes) an Info.plist may have") }
        let bytes = try file.read(at: 0, count: size).get(path: plist, "cannot read")
        let dictionary: [String: Any]?
        do {
            dictionary = try UnsafeFoundation.propertyList(Data(bytes)) as? [String: Any]
        } catch {
            throw .bundle(path: plist, what: "is not a property list (\(error.localizedDescription))")
        }
        guard let value = dictionary?["CFBundleExecutable"] else { return nil }
        guard let executable = value as? String, !executable.isEmpty, !executable.contains("/"),
              executable != ".", executable != "..", !executable.contains("\0") else {
            throw .bundle(path: plist, what: "CFBundleExecutable \(String(describing: value).debugDescription) is not a file name")
        }
        return executable
    }

    /// The one `.app` bundle in `directory/Payload` (an unpacked `.ipa`).
    package static func payloadApp(in directory: String) throws(MachOError) -> String {
        try singleApp(in: directory + "/Payload", named: directory, what: "Payload/X.app bundle")
    }

    /// The one `.app` bundle directly in `directory` (a `Payload` directory).
    package static func singleApp(in directory: String) throws(MachOError) -> String {
        try singleApp(in: directory, named: directory, what: ".app bundle")
    }

    private static func singleApp(in directory: String, named: String, what: String) throws(MachOError) -> String {
        let apps = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
            .filter { $0.hasSuffix(".app") && UnsafeFoundation.isDirectory(directory + "/" + $0) }.sorted()
        guard apps.count == 1 else {
            throw .bundle(path: named, what: apps.isEmpty
                ? "holds no \(what)" : "holds \(apps.count) bundles (\(apps.joined(separator: ", "))): give one")
        }
        return directory + "/" + apps[0]
    }

    /// Unpacks the `.ipa` at `archive` into the work area `workArea` (``WorkArea``) and
    /// returns its `Payload/X.app`. A tree unpacked from the archive as it is now (its
    /// size, modification time, inode, device and real path) is reused, so that `install`
    /// and a later `launch` see the same files; a changed archive is unpacked into a new
    /// tree beside the old one, which stays (a launch may be using it).
    package static func unpack(ipa archive: String, workArea: String, limits: ZipArchive.Limits = ZipArchive.Limits(),
                               check: WorkArea.Check) throws(MachOError) -> String {
        let real = URL(fileURLWithPath: archive).standardizedFileURL.resolvingSymlinksInPath().path
        let file = try ArchiveFile(path: real)
        let work = try WorkArea(path: workArea, check: check)
        return try work.tree(of: file, limits: limits)
    }
}
