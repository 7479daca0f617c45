import Foundation

/// The two Foundation calls of the bundle reader that take pointers.
enum UnsafeFoundation {
    /// Whether `path` (symbolic links followed) is a directory.
    static func isDirectory(_ path: String) -> Bool {
        var isDirectory: ObjCBool = false
        return unsafe FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue
    }

    /// The property list (XML or binary) in `data`.
    static func propertyList(_ data: Data) throws -> Any {
        try unsafe PropertyListSerialization.propertyList(from: data, options: [], format: nil)
    }
}
