import Foundation

/// Fresh directories under the system temporary directory, mode 0755 whatever the umask
/// (a closure in a directory others can write is refused as untrusted).
package enum Scratch {
    package static func directory(_ purpose: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("dyld3-\(purpose)-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        return path
    }

    /// Writes `bytes` to `path` with mode 0644.
    package static func write(_ bytes: [UInt8], to path: String) throws {
        try? FileManager.default.removeItem(atPath: path)
        guard FileManager.default.createFile(atPath: path, contents: Data(bytes), attributes: [.posixPermissions: 0o644]) else {
            throw FixtureError("cannot write \(path)")
        }
    }

    package static func remove(_ path: String) {
        try? FileManager.default.removeItem(atPath: path)
    }
}
