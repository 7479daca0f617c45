import ClosureFormat
import ClosureCache
import MachOReader
import LaunchPlan
import LoaderCore

/// A launch's reading of its closure: the format's steps (``ClosureFile/checkedFrames(_:path:trusting:)``,
/// the frames, ``LaunchClosure/readImageIndex(_:path:)``, the image records, the rest of
/// the body, ``ClosureFile/checkFlags(_:_:path:)``) scheduled over the launch's two cores.
/// When the closure's body is large, the ``LaunchHelper`` wakes while the header is checked,
/// then decodes the second zstd frame while this thread decodes the first, reads the second
/// half of the image records while this thread reads the first, and reads the bind targets
/// and the rest of the body while this thread runs `beside` with the image table (checking
/// the binding and opening the first images), then runs `check` on the decoded closure (a
/// page-in launch's run check). The result and the errors are those of
/// ``ClosureFile/decode(_:path:trusting:)`` on one thread, then `check`: a body error or
/// `check`'s before `beside`'s.
enum ClosureLaunchDecoder {
    /// Maps and decodes the closure at `path` (``ClosureFile/mapTrusted(_:)``) as
    /// ``decode(_:path:trusting:helper:beside:)`` does.
    static func read<Beside>(_ path: String, trusting trustKey: ClosureTrustKey?, helper: LaunchHelper?,
                             check: (@Sendable (LaunchClosure) -> ClosureError?)? = nil,
                             beside: (ClosureImageTable) throws(ClosureError) -> Beside) throws(ClosureError) -> (closure: LaunchClosure, beside: Beside) {
        try decode(ClosureFile.mapTrusted(path), path: path, trusting: trustKey, helper: helper, check: check, beside: beside)
    }

    /// Decodes `file`, running `beside` on this thread with the image table as soon as the
    /// image records are read: beside the helper's reading of the rest of the body and its
    /// `check` of the closure when it runs, else after the whole body is read and checked.
    static func decode<Beside>(_ file: ByteView, path: String, trusting trustKey: ClosureTrustKey? = nil, helper: LaunchHelper?,
                               check: (@Sendable (LaunchClosure) -> ClosureError?)? = nil,
                               beside: (ClosureImageTable) throws(ClosureError) -> Beside) throws(ClosureError) -> (closure: LaunchClosure, beside: Beside) {
        // A large body is worth a second core: its thread wakes while the header is checked.
        // The declared size is read before it is checked; a lie costs only the wake-up.
        if let helper, let fields = try? file.bytes(0, ClosureFileHeader.size),
           ClosureFileHeader(fieldsOf: fields).bodySize >= UInt64(ClosureFile.helperThreshold) {
            helper.start()
        }
        let (header, frames) = try ClosureFile.checkedFrames(file, path: path, trusting: trustKey)
        guard let body = decompress(frames, helper: helper) else { throw ClosureFile.undecodableFrames(header, path: path) }
        let index = try LaunchClosure.readImageIndex(body, path: path)
        let table = try readImages(index, body: body, path: path, helper: helper)
        guard helper?.isRunning == true else {
            let closure = try LaunchClosure(table: table, body: body, tail: index.tail, path: path)
            if let fault = check?(closure) { throw fault }
            try ClosureFile.checkFlags(header, table, path: path)
            return (closure, try beside(table))
        }
        let (besideResult, closure) = LaunchHelper.run(on: helper, helper: {
            Result { () throws(ClosureError) in
                let closure = try LaunchClosure(table: table, body: body, tail: index.tail, path: path)
                if let fault = check?(closure) { throw fault }
                return closure
            }
        }) {
            Result { () throws(ClosureError) -> Beside in
                try ClosureFile.checkFlags(header, table, path: path)
                return try beside(table)
            }
        }
        return (try closure.get(), try besideResult.get())
    }

    /// The body of `frames`: a second frame decoded on `helper`'s thread while this thread
    /// decodes the first (after it without a running helper).
    static func decompress(_ frames: ClosureFrames, helper: LaunchHelper?) -> [UInt8]? {
        frames.decompress { first, second in
            guard let second else { return first() }
            let both = LaunchHelper.run(on: helper, helper: { second() }) { first() }
            return both.body && both.helper
        }
    }

    /// The image records of `index`: the second half read on `helper`'s thread while this
    /// thread reads the first.
    static func readImages(_ index: LaunchClosure.ImageIndex, body: [UInt8], path: String, helper: LaunchHelper?) throws(ClosureError) -> ClosureImageTable {
        let records = index.records, count = index.records.count
        let split = helper?.isRunning == true ? count - count / 2 : count
        let (first, rest) = LaunchHelper.run(on: helper, helper: {
            ClosureImage.parse(records: records[split...], of: body, path: path, imageCount: count)
        }) {
            ClosureImage.parse(records: records[..<split], of: body, path: path, imageCount: count)
        }
        var images = try first.get()
        images.append(contentsOf: try rest.get())
        return index.table(images: images)
    }
}
