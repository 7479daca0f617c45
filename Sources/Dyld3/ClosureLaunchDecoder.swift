import ClosureFormat
import ClosureCache
import MachOReader
import LaunchPlan
import LoaderCore
import LoaderSystem

/// A launch's reading of its closure: the format's steps (``ClosureFile/decode(_:path:trusting:)``)
/// scheduled over the launch's two cores. When the body is large, the ``LaunchHelper`` wakes
/// while the header is checked, then decodes the second zstd frame, reads the second half of
/// the image records, and reads the rest of the body and runs `check` (a page-in launch's run
/// check) while this thread runs `beside` with the image table (checking the binding, opening
/// the first images). The results and errors are those of one thread: a body error or
/// `check`'s before `beside`'s.
enum ClosureLaunchDecoder {
    /// Maps (``ClosureFile/mapTrusted(_:)``) and decodes the closure at `path`; `beside` also
    /// gets the status of the file read.
    static func read<Beside>(_ path: String, trusting trustKey: ClosureTrustKey?, helper: LaunchHelper?,
                             check: (@Sendable (LaunchClosure) -> ClosureError?)? = nil,
                             indexed: ((LaunchClosure.ImageIndex) throws(ClosureError) -> Bool)? = nil,
                             beside: (ClosureImageTable, _ file: FileStatus) throws(ClosureError) -> Beside) throws(ClosureError) -> (closure: LaunchClosure, beside: Beside) {
        let (bytes, status) = try ClosureFile.mapTrusted(path)
        return try decode(bytes, path: path, trusting: trustKey, helper: helper, check: check, indexed: indexed) { (table) throws(ClosureError) in
            try beside(table, status)
        }
    }

    /// Decodes `file`, running `beside` with the image table as soon as the image records are
    /// read: beside the helper's reading of the rest and `check` when it runs, else after them.
    /// `indexed` sees the body's header fields first; when it gives the helper work of its own
    /// (it returns true), the rest is read on this thread.
    static func decode<Beside>(_ file: ByteView, path: String, trusting trustKey: ClosureTrustKey? = nil, helper: LaunchHelper?,
                               check: (@Sendable (LaunchClosure) -> ClosureError?)? = nil,
                               indexed: ((LaunchClosure.ImageIndex) throws(ClosureError) -> Bool)? = nil,
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
        let helper = try indexed?(index) == true ? nil : helper
        let table = try readImages(index, body: body, path: path, helper: helper)
        @Sendable func rest() throws(ClosureError) -> LaunchClosure {
            let closure = try LaunchClosure(table: table, body: body, tail: index.tail, path: path)
            if let fault = check?(closure) { throw fault }
            return closure
        }
        guard helper?.isRunning == true else {
            let closure = try rest()
            try ClosureFile.checkFlags(header, table, path: path)
            return (closure, try beside(table))
        }
        let (besideResult, closure) = LaunchHelper.run(on: helper, helper: { Outcome(rest) }) {
            Outcome { () throws(ClosureError) -> Beside in
                try ClosureFile.checkFlags(header, table, path: path)
                return try beside(table)
            }
        }
        return (try closure.get(), try besideResult.get())
    }

    /// The body of `frames`: a second frame decoded on `helper`'s thread beside the first.
    static func decompress(_ frames: ClosureFrames, helper: LaunchHelper?) -> [UInt8]? {
        frames.decompress { first, second in
            guard let second else { return first() }
            let both = LaunchHelper.run(on: helper, helper: { second() }) { first() }
            return both.body && both.helper
        }
    }

    /// The image records of `index`: the second half read on `helper`'s thread beside the first.
    static func readImages(_ index: LaunchClosure.ImageIndex, body: [UInt8], path: String, helper: LaunchHelper?) throws(ClosureError) -> ClosureImageTable {
        let records = index.records, count = index.records.count
        let split = helper?.isRunning == true ? count - count / 2 : count
        let (first, rest) = LaunchHelper.run(on: helper, helper: {
            Outcome { () throws(ClosureError) in try ClosureImage.parse(records: records[split...], of: body, path: path, imageCount: count) }
        }) {
            Outcome { () throws(ClosureError) in try ClosureImage.parse(records: records[..<split], of: body, path: path, imageCount: count) }
        }
        var images = try first.get()
        images.append(contentsOf: try rest.get())
        return index.table(images: images)
    }
}
