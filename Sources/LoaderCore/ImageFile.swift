import Foundation
import MachOReader
import LaunchPlan
import LoaderSystem

/// One Mach-O image read from disk for a launch: where it is and its parsed slice.
package struct ImageFile: Sendable {
    /// The path the image was found at, symlinks followed.
    package let path: String
    /// The slice's offset in the file, which segment file offsets are relative to.
    package let sliceOffset: Int
    package let image: MachOImage
    /// The whole file as mapped to parse it, and its status then: nil for an image read where
    /// a shared cache or a launch holds it.
    package let file: (bytes: ByteView, status: FileStatus)?

    package init(path: String, sliceOffset: Int, image: MachOImage, file: (bytes: ByteView, status: FileStatus)? = nil) {
        (self.path, self.sliceOffset, self.image, self.file) = (path, sliceOffset, image, file)
    }

    /// Maps `path` read-only and parses the slice for `arch`. A path inside `root` is opened
    /// inside it (``UnsafeRootedOpen``); the image's path is then the file actually mapped.
    package static func load(path: String, arch: String, root: String? = nil) throws(LoadError) -> ImageFile {
        let (bytes, resolvedPath, status) = try map(path, root: root)
        return try LoadError.reading(resolvedPath, anyError: {
            let file = try UniversalFile(parsing: bytes)
            guard let slice = file.slices.first(where: { $0.cpu.matches(arch) }) else {
                throw LoadError.wrongArchitecture(path: resolvedPath, wanted: arch, available: file.slices.map(\.cpu.name))
            }
            let image = try file.image(slice)
            // dyld's rule, stricter than LLVM's: every load command ends inside sizeofcmds.
            guard image.loadCommandsExtent <= Int(image.header.commandsSize) else {
                throw MachOError.malformed(
                    "load commands run \(image.loadCommandsExtent) bytes, past sizeofcmds (\(image.header.commandsSize))",
                    at: slice.offset + 20)
            }
            return ImageFile(path: resolvedPath, sliceOffset: slice.offset, image: image, file: (bytes, status))
        })
    }

    /// The bytes of an image mapped by `plan` that can be read where they lie: all of it when
    /// its segments follow one another from its base with no gap between them and each is
    /// readable (a gap is reserved with no access); nil otherwise.
    package static func readableExtent(_ plan: ImagePlan) -> Int? {
        var end: UInt64 = 0
        for segment in plan.segments.sorted(by: { $0.vmOffset < $1.vmOffset }) {
            guard segment.vmOffset == end, segment.protection.contains(.read) else { return nil }
            end = segment.vmOffset + segment.vmSize
        }
        return end == plan.vmSize ? Int(exactly: end) : nil
    }

    /// The image at `path` parsed where a launch mapped it (``MachOImage/init(parsingMapped:)``):
    /// `bytes`, its ``readableExtent(_:)`` from its base; `sliceOffset`: its slice's offset in the file.
    package static func asMapped(path: String, sliceOffset: Int, bytes: ByteView) throws(LoadError) -> ImageFile {
        try LoadError.reading(path) { () throws(MachOError) in
            ImageFile(path: path, sliceOffset: sliceOffset, image: try MachOImage(parsingMapped: bytes))
        }
    }

    /// A regular file mapped read-only, opened inside `root` when it lies there, and the path mapped.
    static func map(_ path: String, root: String?) throws(LoadError) -> (bytes: ByteView, path: String, status: FileStatus) {
        let absolute = PathResolver.normalize(path)
        let base = root.map(PathResolver.normalize)
        let inside = base.flatMap { PathResolver.relative(absolute, inside: $0) }
        do throws(LoadError) {
            guard let base, let inside else {
                let (storage, status) = try UnsafeRootedOpen.mapUnconfined(absolute)
                return (ByteView(storage), absolute, status)
            }
            let (storage, resolved, status) = try UnsafeRootedOpen.map(inside, inRoot: base)
            return (ByteView(storage), base + resolved, status)
        } catch {
            throw .unusable(path: absolute, reason: inside == nil ? "\(error)" : "\(error) (resolved inside the root \(base!))")
        }
    }

    /// The regular file at `path`, mapped read-only; anything else is refused unopened.
    package static func mapRegularFile(_ path: String) throws(LoadError) -> ByteView {
        try map(path, root: nil).bytes
    }

    package static func architectures(path: String) throws(LoadError) -> [String] {
        let bytes = try map(path, root: nil).bytes
        return try LoadError.reading(path) { () throws(MachOError) in try UniversalFile(parsing: bytes).slices.map(\.cpu.name) }
    }
}

extension LoadError {
    /// What `body` returns; a reader error it throws, attributed to the file at `path`.
    package static func reading<T>(_ path: String, _ body: () throws(MachOError) -> T) throws(LoadError) -> T {
        do {
            return try body()
        } catch {
            throw .malformed(error.inFile(path))
        }
    }

    /// What `body` returns; a reader error it throws attributed to the file at `path`, a
    /// ``LoadError`` as it is, any other error as that file unusable.
    package static func reading<T>(_ path: String, anyError body: () throws -> T) throws(LoadError) -> T {
        do {
            return try body()
        } catch let error as LoadError {
            throw error
        } catch let error as MachOError {
            throw .malformed(error.inFile(path))
        } catch {
            throw .unusable(path: path, reason: "\(error)")
        }
    }
}
