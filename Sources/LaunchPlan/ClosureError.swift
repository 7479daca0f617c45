import MachOReader

/// Why a closure, a prelinked set or its copy slid for this boot cannot be used or written:
/// each case is one fallback reason a launch can report, with where (the file, the image)
/// and the cause underneath kept whole.
package enum ClosureError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No closure file for this app and architecture.
    case missing(path: String)
    /// No copy of a prelinked set slid for this boot at `path` yet.
    case noSlidCopy(path: String)
    /// The bytes are damaged: bad magic, checksum mismatch, truncation, bad structure.
    case corrupt(path: String, offset: Int, what: String)
    /// Written by an incompatible builder (format version).
    case incompatible(path: String, what: String)
    /// An image changed on disk since the closure was built.
    case stale(path: String, image: String, what: String)
    /// The closure file or its directory can be written by other users, or cannot be read.
    case untrusted(path: String, what: String)
    /// Writing a closure failed; nothing that existed was changed.
    case writeFailed(path: String, what: String)
    /// Writing it failed in a system call (creating, writing, syncing or renaming the file).
    indirect case systemCallFailed(path: String, LoadError)
    /// Built for another request (``ClosureBinding``): the field that differs, what the
    /// request asked for and what the closure holds.
    case mismatch(path: String, field: BindingField, expected: String, found: String)
    /// The closure's mapping plan for `image` is not the one the image's own header and
    /// load commands give.
    case plan(path: String, image: String, PlanDisagreement)
    /// A run stream of `image` that does not decode, or a run or target it does not allow
    /// (outside its writable segments, outside the image, past the bind-target table). The
    /// closure and image are nil until the walk's caller names them (``naming(_:image:)``).
    case fixups(path: String?, image: String?, stream: FixupStream, fault: FixupFault)
    /// Mapping `image` as the closure plans it failed (a file offset the kernel will not
    /// map, a reservation larger than the address space, segments that collide): the plan
    /// is at fault, so the launch can fall back. `what` is the mapping's own reason.
    case mapping(path: String, image: String, what: String)

    /// The one-word reason used in `--json` and fallback lines.
    package var kind: String {
        switch self {
        case .missing, .noSlidCopy: "missing"
        case .corrupt: "corrupt"
        case .incompatible: "incompatible"
        case .stale: "stale"
        case .untrusted: "untrusted"
        case .writeFailed, .systemCallFailed: "write-failed"
        case let .mismatch(_, field, _, _): "wrong-\(field.rawValue)"
        case .plan, .fixups, .mapping: "invalid"
        }
    }

    package var description: String {
        switch self {
        case let .missing(path): "\(path): no closure"
        case .noSlidCopy: "no copy slid for this boot yet"
        case let .corrupt(path, offset, what): "\(path): corrupt at offset \(hex(offset)): \(what)"
        case let .incompatible(path, what): "\(path): incompatible: \(what)"
        case let .stale(path, image, what): "\(path): stale: \(image) \(what)"
        case let .untrusted(path, what): "\(path): refused: \(what)"
        case let .writeFailed(path, what): "\(path): cannot write: \(what)"
        case let .systemCallFailed(path, failure): "\(path): cannot write: \(failure)"
        case let .mismatch(path, field, expected, found):
            "\(path): built for \(field == .inserted ? "other inserted libraries" : "another \(field.rawValue)"): \(found.isEmpty ? "(none)" : found), this launch asks for \(expected.isEmpty ? "(none)" : expected)"
        case let .plan(path, image, disagreement): "\(path): invalid for \(image): \(disagreement)"
        case let .fixups(path?, image?, stream, fault): "\(path): invalid for \(image): \(stream.rawValue): \(fault)"
        case let .fixups(_, _, stream, fault): "\(stream.rawValue): \(fault)"
        case let .mapping(path, image, what): "\(path): invalid for \(image): its plan cannot be mapped: \(what)"
        }
    }

    /// The fields of a closure's binding (``ClosureBinding``), named as a mismatch reports them.
    package enum BindingField: String, Sendable, CaseIterable {
        case builder, arch, root, app, host, inserted, policy
    }

    /// The fault of a fixup run stream that does not decode or is not allowed.
    package var fixupFault: FixupFault? {
        if case let .fixups(_, _, _, fault) = self { fault } else { nil }
    }

    /// What `body`, a walk of `stream`, returns; its fault named with the stream.
    @inlinable
    package static func walking<T>(_ stream: FixupStream, _ body: () throws(FixupFault) -> T) throws(ClosureError) -> T {
        do throws(FixupFault) {
            return try body()
        } catch {
            throw .fixups(path: nil, image: nil, stream: stream, fault: error)
        }
    }

    /// The same error, a fixup walk's fault naming the closure at `path` and its image `image`.
    package func naming(_ path: String, image: String) -> ClosureError {
        guard case let .fixups(nil, nil, stream, fault) = self else { return self }
        return .fixups(path: path, image: image, stream: stream, fault: fault)
    }
}
