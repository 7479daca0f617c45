import LaunchPlan

/// Where one page's runs start in a run stream: a restart point for a ``FixupRunWalk``. Runs
/// are delta-coded, so a walk that starts mid-stream needs the delta state there.
package struct FixupRestart: Equatable, Sendable {
    /// How many runs of the stream lie on the page (0: none; the other fields are then 0).
    package var runs: Int
    /// Byte offset, in the run stream, of the page's first run header.
    package var offset: Int
    /// The last location of the run before it (0 when it is the stream's first run).
    package var location: UInt64
    /// Rebase streams: the target of the rebase before it (0 when none). Bind streams: 0.
    package var target: UInt64

    package static let none = FixupRestart(runs: 0, offset: 0, location: 0, target: 0)
}

/// One page of an image that receives fixups, and where its rebase and bind runs start.
package struct FixupPage: Equatable, Sendable {
    /// The page number: the page's offset from the image's base / the index's page size.
    package var page: UInt64
    package var rebases: FixupRestart
    package var binds: FixupRestart
}

/// An image's fixup page index (docs/closure-format.md, "Fixup page index"): for every page
/// that receives a fixup, where its runs start in the rebase and bind streams. Runs are cut at
/// page boundaries, so page-in linking applies one page's fixups without decoding the rest.
///
/// Encoded as a blob: `uleb pageSize` (0: no index), `uleb pageCount`, then per page, pages
/// strictly increasing, `uleb pageDelta` (page − previous page − 1; the first page's number),
/// `uleb rebaseRuns` [+ `uleb offset, uleb location, uleb target`], `uleb bindRuns`
/// [+ `uleb offset, uleb location`]. Read through ``FixupPageCursor``.
package struct FixupPageIndex: Equatable, Sendable {
    /// The page size the builder cuts runs at (the x86_64 and arm64 Linux base page).
    package static let pageSize: UInt64 = 4096

    /// The encoded index (decoded closures: a slice of the body).
    package var bytes: ArraySlice<UInt8>

    package init(bytes: ArraySlice<UInt8>) { self.bytes = bytes }

    /// An image without an index: a fixup straddles two pages.
    package static let absent = FixupPageIndex(pages: [], pageSize: 0)

    /// The index of `pages` (sorted, at `pageSize`).
    package init(pages: [FixupPage], pageSize: UInt64 = FixupPageIndex.pageSize) {
        var w = ClosureWriter()
        w.uleb(pageSize)
        w.uleb(pages.count)
        var next: UInt64 = 0
        for page in pages {
            w.uleb(page.page - next)
            next = page.page + 1
            w.uleb(page.rebases.runs)
            if page.rebases.runs > 0 {
                for value in [UInt64(page.rebases.offset), page.rebases.location, page.rebases.target] { w.uleb(value) }
            }
            w.uleb(page.binds.runs)
            if page.binds.runs > 0 {
                w.uleb(page.binds.offset)
                w.uleb(page.binds.location)
            }
        }
        bytes = w.bytes[...]
    }

    /// Where one page's runs start in one stream.
    package typealias PageRestart = (page: UInt64, restart: FixupRestart)

    /// Groups a stream's runs by page as they are written or walked: the one place that decides
    /// a page's restart point and when a stream cannot be indexed (a run or fixup crossing a
    /// page boundary, pages out of order).
    struct Collector: FixupRunVisitor {
        private var pages: [PageRestart] = []
        private var indexable = true

        mutating func add(_ run: FixupRun, before: FixupRestart) {
            let page = run.start / pageSize
            guard indexable, run.last / pageSize == page, run.last % pageSize <= pageSize - FixupRunWalk.storeSize else {
                indexable = false
                return
            }
            if let last = pages.last, last.page == page {
                pages[pages.count - 1].restart.runs += 1
            } else if pages.last.map({ $0.page < page }) ?? true {
                pages.append((page, before))
            } else {
                indexable = false
            }
        }

        mutating func visitRun(_ accepted: FixupRun, _ run: FixupRun, before: FixupRestart) {
            add(run, before: before)
        }

        /// The stream's restart points per page; nil when it cannot be indexed.
        var restarts: [PageRestart]? { indexable ? pages : nil }
    }

    /// The index of two streams' restart points: ``absent`` when either cannot be indexed.
    package init(rebases: [PageRestart]?, binds: [PageRestart]?) {
        guard let rebases, let binds else {
            self = .absent
            return
        }
        var pages: [FixupPage] = []
        var (r, b) = (0, 0)
        while r < rebases.count || b < binds.count {
            let page = min(r < rebases.count ? rebases[r].page : .max, b < binds.count ? binds[b].page : .max)
            var entry = FixupPage(page: page, rebases: .none, binds: .none)
            if r < rebases.count, rebases[r].page == page { entry.rebases = rebases[r].restart; r += 1 }
            if b < binds.count, binds[b].page == page { entry.binds = binds[b].restart; b += 1 }
            pages.append(entry)
        }
        self.init(pages: pages)
    }

    /// The page index two run streams call for, grouped as the encoder groups them (`verify`
    /// compares it with the recorded one).
    package static func derive(rebaseRuns: ArraySlice<UInt8>, bindRuns: ArraySlice<UInt8>) throws(ClosureError) -> FixupPageIndex {
        try derive(rebaseRuns: rebaseRuns, bindRuns: bindRuns, within: EveryRun(), imageSize: .max, tableSize: .max)
    }

    /// ``derive(rebaseRuns:bindRuns:)`` with each run accepted by `bounds`, each rebase target
    /// below `imageSize` and each bind target index below `tableSize`.
    static func derive<Bounds: FixupRunBounds>(rebaseRuns: ArraySlice<UInt8>, bindRuns: ArraySlice<UInt8>, within bounds: Bounds,
                                               imageSize: UInt64, tableSize: Int) throws(ClosureError) -> FixupPageIndex
        where Bounds.Accepted == FixupRun {
        var rebases = Collector(), binds = Collector()
        try ClosureError.walking(.rebases) { () throws(FixupFault) in
            try FixupRunWalk(rebaseRuns).rebases(within: bounds, imageSize: imageSize, into: &rebases)
        }
        try ClosureError.walking(.binds) { () throws(FixupFault) in
            try FixupRunWalk(bindRuns).binds(within: bounds, tableSize: tableSize, into: &binds)
        }
        return FixupPageIndex(rebases: rebases.restarts, binds: binds.restarts)
    }

    /// Every page of the index, decoded.
    package func pages(path: String) throws(ClosureError) -> (pageSize: UInt64, pages: [FixupPage]) {
        var cursor = try FixupPageCursor(bytes, path: path)
        var pages: [FixupPage] = []
        pages.reserveCapacity(cursor.pagesLeft)
        while let page = try cursor.next() { pages.append(page) }
        return (cursor.pageSize, pages)
    }

    /// Checks the index against its image: a page size of 0 (no pages) or a power of two from
    /// 4 KiB to 64 KiB; pages strictly increasing, each inside a writable segment of `plan`, each
    /// with a run; every restart offset inside its stream, no more runs in all than it holds.
    func validate(plan: ImagePlan, rebaseRuns: ArraySlice<UInt8>, bindRuns: ArraySlice<UInt8>, path: String) throws(ClosureError) {
        var cursor = try FixupPageCursor(bytes, path: path)
        let size = cursor.pageSize
        guard size == 0 || (size >= 4096 && size <= 65536 && size & (size - 1) == 0) else {
            throw .corrupt(path: path, offset: 0, what: "fixup page index of \(path): page size \(size) is not 0 or a power of two from 4096 to 65536")
        }
        guard size != 0 || cursor.pagesLeft == 0 else {
            throw .corrupt(path: path, offset: 0, what: "fixup page index of \(path) lists pages without a page size")
        }
        guard cursor.pagesLeft > 0 else { return try cursor.finish() }
        // The streams' run counts (their first numbers): a stream is otherwise decoded only as it is applied.
        var rebaseRunsLeft = try FixupRunWalk.runCount(rebaseRuns, path: path)
        var bindRunsLeft = try FixupRunWalk.runCount(bindRuns, path: path)
        while let page = try cursor.next() {
            let entryEnd = cursor.offset
            func bad(_ what: String) -> ClosureError {
                .corrupt(path: path, offset: entryEnd, what: "fixup page index of \(path), page \(page.page): \(what)")
            }
            let (start, overflow) = page.page.multipliedReportingOverflow(by: size)
            guard !overflow, plan.segments.contains(where: { $0.isWritable && $0.contains(start) }) else {
                throw bad("the page is not inside a writable segment")
            }
            guard page.rebases.runs + page.binds.runs > 0 else { throw bad("the page has no runs") }
            guard page.rebases.runs <= rebaseRunsLeft, page.binds.runs <= bindRunsLeft else { throw bad("more runs than the streams hold") }
            rebaseRunsLeft -= page.rebases.runs
            bindRunsLeft -= page.binds.runs
            guard page.rebases.runs == 0 || page.rebases.offset < rebaseRuns.count,
                  page.binds.runs == 0 || page.binds.offset < bindRuns.count else {
                throw bad("a restart offset is past the end of its run stream")
            }
        }
    }
}

/// The one reader of a ``FixupPageIndex``: its page size and page count, then one page per
/// ``next()``, refusing a page number that does not increase and bytes after the last page.
package struct FixupPageCursor {
    private var reader: ClosureReader
    package let pageSize: UInt64
    package private(set) var pagesLeft: Int
    private var nextPage: UInt64 = 0

    package init(_ bytes: ArraySlice<UInt8>, path: String) throws(ClosureError) {
        reader = ClosureReader(bytes, path: path)
        pageSize = try reader.uleb()
        pagesLeft = try reader.count(of: "fixup page", minimumSize: 3)
    }

    /// Byte offset of the next entry in the index.
    package var offset: Int { reader.position }

    package func finish() throws(ClosureError) {
        guard reader.atEnd else { throw reader.corrupt("bytes after the last fixup page") }
    }

    /// The next page, or nil after the last (then the index must be at its end).
    package mutating func next() throws(ClosureError) -> FixupPage? {
        guard pagesLeft > 0 else {
            try finish()
            return nil
        }
        pagesLeft -= 1
        let (page, overflow) = nextPage.addingReportingOverflow(try reader.uleb())
        guard !overflow, page < UInt64.max else { throw reader.corrupt("fixup page number overflows") }
        nextPage = page + 1
        var rebases = FixupRestart.none, binds = FixupRestart.none
        rebases.runs = try reader.int("rebase runs on a page")
        if rebases.runs > 0 {
            rebases.offset = try reader.int("rebase restart offset")
            rebases.location = try reader.uleb()
            rebases.target = try reader.uleb()
        }
        binds.runs = try reader.int("bind runs on a page")
        if binds.runs > 0 {
            binds.offset = try reader.int("bind restart offset")
            binds.location = try reader.uleb()
        }
        return FixupPage(page: page, rebases: rebases, binds: binds)
    }
}
