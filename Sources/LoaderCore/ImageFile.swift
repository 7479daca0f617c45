import Foundation
import MachOReader

/// One Mach-O image read from disk for a launch: where it is and its parsed slice.
public struct ImageFile: Sendable {
    /// The path the image was found at (as resolved, symlinks followed).
    public let path: String
    /// The selected slice's offset in the file (0 for a thin file): segment file offsets
    /// are relative to it.
    public let sliceOffset: Int
    public let image: MachOImage

    /// Reads `path` and parses the slice for `arch`.
    public static func load(path: String, arch: String) throws(LoadError) -> ImageFile {
        let bytes: [UInt8]
        do {
            bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path), options: .mappedIfSafe))
        } catch {
            throw .unusable(path: path, reason: "cannot read: \(error.localizedDescription)")
        }
        do {
            let file = try UniversalFile(parsing: bytes)
            guard let slice = file.slices.first(where: { $0.cpu.matches(arch) }) else {
                throw LoadError.wrongArchitecture(path: path, wanted: arch, available: file.slices.map(\.cpu.name))
            }
            return ImageFile(path: path, sliceOffset: slice.offset, image: try file.image(slice))
        } catch let error as MachOError {
            throw .malformed(error.inFile(path))
        } catch let error as LoadError {
            throw error
        } catch {
            throw .unusable(path: path, reason: "\(error)")
        }
    }

    /// The architectures a file holds, for choosing a default.
    public static func architectures(path: String) throws(LoadError) -> [String] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .unusable(path: path, reason: "cannot read")
        }
        do {
            return try UniversalFile(parsing: Array(data)).slices.map(\.cpu.name)
        } catch {
            throw .malformed(error.inFile(path))
        }
    }
}
