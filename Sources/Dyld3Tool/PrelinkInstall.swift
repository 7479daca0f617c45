import ClosureBuild
import ClosureFormat
import Foundation
import ClosureCache
import MachOInspect
import LaunchPlan

/// `install --prelink`: the prelinked set written beside a closure, and what to print about it.
struct PrelinkInstall {
    let path: String
    let images: Int, slideLocations: Int
    let bytes: UInt64
    /// The images' files' total size: the disk the set costs on top of them.
    let imageBytes: UInt64
    /// The copy slid for this boot, written beside the set so that the first launch maps it
    /// as every later one does; or why it was not written (the first launch then writes it);
    /// nil for a set bound into the shared cache (slid at each launch).
    let slid: Result<String, ClosureError>?
    let seconds: Double

    /// Builds the set for `closure` (just written to `closurePath`) and writes it beside it,
    /// signed with `signer` as the closure is.
    static func write(_ closure: LaunchClosure, closurePath: String, signedWith signer: ClosureSigningKey?) throws -> PrelinkInstall {
        let start = ContinuousClock.now
        let path = ClosureCache.prelinkedSetPath(forClosure: closurePath)
        let (set, data) = try PrelinkBuilder.build(closure, closurePath: closurePath)
        try PrelinkedSetFile.write(set, data: data, to: path, signedWith: signer)
        let slidPath = ClosureCache.slidSetPath(forSet: path)
        let slid: Result<String, ClosureError>? = set.bindsIntoSharedCache ? nil : Result { () throws(ClosureError) in
            try SlidPrelinkedSetFile.write(for: try PrelinkedSetFile.open(path), to: slidPath)
            return slidPath
        }
        let elapsed = ContinuousClock.now - start
        let bytes = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? UInt64) ?? 0
        // A set bound into the shared cache holds the app's own images only.
        let own = closure.images.filter { $0.cacheSlot == nil }
        return PrelinkInstall(path: path, images: own.count, slideLocations: set.slideCount, bytes: bytes,
                              imageBytes: own.reduce(0) { $0 + $1.identity.size }, slid: slid,
                              seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }

    var line: String {
        "  prelinked set: \(images) images, \(slideLocations) slide locations -> \(path) (\(bytes) bytes; images \(imageBytes) bytes; "
            + String(format: "%.3f s)", seconds)
            + { switch slid {
                case let .success(path): "\n  slid for this boot -> \(path)"
                case let .failure(error): "\n  not slid for this boot (the first launch will): \(error)"
                case nil: "\n  bound into the shared cache: slid at each launch"
            } }()
    }

    var json: [(String, JSONValue)] {
        [("prelinked_set", .string(path)), ("prelinked_images", .int(Int64(images))), ("prelinked_set_bytes", .uint(bytes)), ("prelinked_image_bytes", .uint(imageBytes)),
         ("prelinked_slide_locations", .int(Int64(slideLocations))),
         ("slid_set", { if case let .success(path)? = slid { .string(path) } else { .null } }())]
    }
}
