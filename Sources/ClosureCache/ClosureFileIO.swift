import Foundation
import ClosureFormat
import LoaderCore
import MachOReader
import LaunchPlan
import LoaderSystem

extension ClosureFile {
    /// The largest closure file read (thousands of images take a few MiB), from its `fstat`.
    package static let maxFileSize = 64 << 20

    /// Maps and decodes the closure at `path`; the binding's app and host must be its root images.
    package static func read(_ path: String, trusting trustKey: ClosureTrustKey? = nil) throws(ClosureError) -> LaunchClosure {
        let closure = try decode(mapTrusted(path).bytes, path: path, trusting: trustKey)
        try closure.checkRoots(closurePath: path)
        return closure
    }

    /// The closure file at `path`, mapped, refusing files others could have written
    /// (``ClosureOwnership``), symlinks and anything over ``maxFileSize``.
    /// `status`: the file's, from the descriptor read.
    package static func mapTrusted(_ path: String) throws(ClosureError) -> (bytes: ByteView, status: FileStatus) {
        let file = try openTrusted(path)
        guard let bytes = file.mapAll() else { throw .untrusted(path: path, what: "cannot be mapped") }
        return (bytes, file.status)
    }

    /// The closure file at `path`, opened once (no symlink followed) and checked on that
    /// descriptor for ownership and size before a byte is read.
    static func openTrusted(_ path: String) throws(ClosureError) -> UnsafeFileIO.OpenFile {
        let file = try UnsafeFileIO.openNoFollow(path).get()
        try checkOwnership(path, file.status)
        guard file.status.size <= UInt64(maxFileSize) else {
            throw .corrupt(path: path, offset: 0, what: "\(file.status.size) bytes is over the \(maxFileSize)-byte limit for a closure file")
        }
        return file
    }

    /// Checks that the file at `path`, if there is one, would be trusted (`install` replaces
    /// one that would not, when it can).
    package static func checkTrust(_ path: String) throws(ClosureError) {
        switch UnsafeFileIO.openNoFollow(path) {
        case .failure(.missing): return
        case let .failure(error): throw error
        case let .success(file): try checkOwnership(path, file.status)
        }
    }

    /// A closure file, or its directory, that another user can write could have been forged.
    package static func checkOwnership(_ path: String, _ status: FileStatus) throws(ClosureError) {
        let directoryPath = PathResolver.containingDirectory(of: path)
        // A directory that is no link is its own target: one `lstat` serves both checks.
        let linkStatus = FileStatus.ofLink(directoryPath)
        guard let directoryStatus = linkStatus?.isSymbolicLink == false ? linkStatus : FileStatus.of(directoryPath) else {
            throw .untrusted(path: path, what: "its directory cannot be examined")
        }
        if let problem = ClosureOwnership.check(file: status, directory: directoryStatus, user: UnsafeFileIO.effectiveUserID)
            ?? ClosureOwnership.checkAncestors(of: directoryPath, user: UnsafeFileIO.effectiveUserID, linkStatus: linkStatus) {
            throw .untrusted(path: path, what: problem.description)
        }
    }

    /// Whether the closure at `path` says it is signed, unchecked: `launch --rebuild` never
    /// writes an unsigned closure over a signed one.
    package static func isSigned(_ path: String) -> Bool {
        guard case let .success(file) = UnsafeFileIO.openNoFollow(path), file.status.size >= UInt64(ClosureFileHeader.size),
              file.status.size <= UInt64(maxFileSize), let bytes = file.mapAll(),
              let fields = try? bytes.bytes(0, ClosureFileHeader.size), Array(fields[0..<8]) == ClosureFileHeader.magic else { return false }
        return ClosureFileHeader(fieldsOf: fields).signatureSize > 0
    }

    /// Writes `closure` to `path` atomically, read-only; a failure leaves any existing file as it was.
    package static func write(_ closure: LaunchClosure, to path: String, signedWith signer: ClosureSigningKey? = nil) throws(ClosureError) {
        try UnsafeFileIO.writeCacheFile(encode(closure, signedWith: signer), to: path)
    }
}
