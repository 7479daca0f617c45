import LoaderCore
import LaunchPlan
import MachOReader
import ClosureFormat
import ClosureCache
import Pager

/// A closure's fixups, page by page, for page-in linking's handler: each image's page index
/// decoded once at launch into a sorted array, so a fault finds its page by binary search
/// and applies that page's runs from their restart points, with the eager loop's checks
/// (each run on the page, each rebase target inside the image, each bind index in the table)
/// and without allocation, strings or lookups.
package final class PageInFixups: PageFixupSource, @unchecked Sendable {
    /// One image's runs and indexed pages (empty for an image linked eagerly).
    struct ImagePages {
        let rebaseRuns: ArraySlice<UInt8>
        let bindRuns: ArraySlice<UInt8>
        let pages: [FixupPage]
        let vmSize: UInt64
        let path: String
    }

    private let images: [ImagePages]
    private let targetValues: [UInt64]
    private let pageSize: UInt64

    /// Which images are indexed at `pageSize` (the host's) and which pages receive their
    /// fixups: the plan of a page-in launch, decided before anything is mapped.
    package struct Plan: Sendable {
        /// Per image: its indexed pages (empty when the image is linked eagerly).
        package let pages: [[FixupPage]]
        /// Per image: whether its fixups are applied page by page (else eagerly at launch).
        package let indexed: [Bool]
        /// Per image, per segment: the runs of consecutive indexed pages (offsets from the
        /// image's base), reserved without contents and filled on first touch. Pages of a
        /// segment that receive no fixup are mapped from the file as in an eager launch.
        package let ranges: [[[Range<UInt64>]]]
        /// Pages indexed in all.
        package var pageCount: Int { pages.reduce(0) { $0 + $1.count } }
    }

    /// The page-in plan of `closure` for pages of `pageSize` bytes: an image whose index is
    /// absent or at another page size is linked eagerly. Only writable segments' pages are
    /// paged in.
    package static func plan(_ closure: LaunchClosure, pageSize: UInt64) throws(ClosureError) -> Plan {
        var pages: [[FixupPage]] = [], indexed: [Bool] = [], ranges: [[[Range<UInt64>]]] = []
        for image in closure.images {
            let index = try image.fixupPageIndex.pages(path: image.path)
            let usable = index.pageSize == pageSize
            pages.append(usable ? index.pages : [])
            indexed.append(usable)
            ranges.append(image.plan.segments.map { segment in
                guard usable, segment.isWritable else { return [] }
                let end = segment.vmOffset + (segment.vmSize + pageSize - 1) / pageSize * pageSize
                var runs: [Range<UInt64>] = []
                for page in index.pages {
                    let (start, overflow) = page.page.multipliedReportingOverflow(by: pageSize)
                    guard !overflow, start >= segment.vmOffset, start < end else { continue }
                    if let last = runs.last, last.upperBound == start {
                        runs[runs.count - 1] = last.lowerBound..<(start + pageSize)
                    } else {
                        runs.append(start..<(start + pageSize))
                    }
                }
                return runs
            })
        }
        return Plan(pages: pages, indexed: indexed, ranges: ranges)
    }

    /// The source for one launch of `closure` whose bind targets have `targetValues`.
    package init(_ closure: LaunchClosure, plan: Plan, targetValues: [UInt64], pageSize: UInt64) {
        images = zip(closure.images, plan.pages).map { image, pages in
            ImagePages(rebaseRuns: image.rebaseRuns, bindRuns: image.bindRuns, pages: pages, vmSize: image.plan.vmSize, path: image.path)
        }
        self.targetValues = targetValues
        self.pageSize = pageSize
    }

    /// The source for one launch of a prelinked set: its slide runs, read as the rebase runs
    /// of one image (index 0), the whole range (`vmSize` bytes, at the region's base).
    package init(slideRuns: ArraySlice<UInt8>, pages: [FixupPage], vmSize: UInt64, path: String, pageSize: UInt64) {
        images = [ImagePages(rebaseRuns: slideRuns, bindRuns: [0], pages: pages, vmSize: vmSize, path: path)]
        targetValues = []
        self.pageSize = pageSize
    }

    package func applyFixups(image index: Int, to page: inout PageBuffer) -> PageFillFailure? {
        guard let entry = entry(image: index, vmOffset: page.vmOffset) else { return nil }
        let image = images[index]
        let vmSize = image.vmSize
        let targetValues = targetValues
        if UnsafePageFixupLoop.applyRebases(image.rebaseRuns, restart: entry.rebases, to: page, vmSize: vmSize),
           UnsafePageFixupLoop.applyBinds(image.bindRuns, restart: entry.binds, to: page, targetValues: targetValues) {
            return nil
        }
        // The checked walk over the same runs names what the pointer loop would not accept.
        return applyFixupsChecked(image: index, entry: entry, to: &page)
    }

    /// The index entry of the page at `vmOffset` of image `index`, if the page has one.
    func entry(image index: Int, vmOffset: UInt64) -> FixupPage? {
        guard index < images.count else { return nil }
        let pages = images[index].pages
        let number = vmOffset / pageSize
        let low = pages.partitionPoint { $0.page < number }
        return low < pages.count && pages[low].page == number ? pages[low] : nil
    }

    /// The checked walk (``FixupRunWalk``) of one page's runs: each run on the page, each
    /// rebase target inside the image, each bind index in the table; the fault it names.
    func applyFixupsChecked(image index: Int, entry: FixupPage, to page: inout PageBuffer) -> PageFillFailure? {
        let image = images[index]
        let base = page.imageBase
        let vmSize = image.vmSize
        let targetValues = targetValues
        do throws(FixupFault) {
            try FixupRunWalk(image.rebaseRuns, restart: entry.rebases).forEachRebase { (run, _) throws(FixupFault) in
                guard page.contains(run) else { throw .runOffPage(start: run.start) }
            } _: { (location, target) throws(FixupFault) in
                guard target.offset < vmSize else { throw .rebaseTargetOutsideImage(target: target.offset) }
                try page.store(target.value(imageBase: base), atImageOffset: location)
            }
            try FixupRunWalk(image.bindRuns, restart: entry.binds).forEachBind { (run, _) throws(FixupFault) in
                guard page.contains(run) else { throw .runOffPage(start: run.start) }
            } _: { (location, targetIndex, addend) throws(FixupFault) in
                guard targetIndex < UInt64(targetValues.count) else {
                    throw .bindTargetPastTable(index: targetIndex, tableSize: targetValues.count)
                }
                try page.store(targetValues[Int(targetIndex)] &+ UInt64(bitPattern: addend), atImageOffset: location)
            }
        } catch {
            return .fixups(image: index, vmOffset: page.vmOffset, error)
        }
        return nil
    }
}
