import LoaderCore
import LaunchMemory
import LaunchPlan
import MachOReader
import ClosureFormat
import ClosureCache
import Pager

/// A closure's fixups, page by page, for page-in linking's handler: each image's page index
/// decoded once at launch into a sorted array, so a fault finds its page by binary search and
/// applies its runs from their restart points, with the eager loop's checks and without
/// allocation, strings or lookups.
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

    /// Which images are indexed at the host's page size and which pages receive their fixups:
    /// decided before anything is mapped.
    package struct Plan: Sendable {
        /// Per image: its indexed pages (empty when the image is linked eagerly).
        package let pages: [[FixupPage]]
        /// Per image: whether its fixups are applied page by page (else eagerly at launch).
        package let indexed: [Bool]
        /// Per image, per segment: the runs of consecutive indexed pages (offsets from the image's
        /// base), reserved without contents and filled on first touch; the rest is mapped from the file.
        package let ranges: [[[Range<UInt64>]]]
        /// Pages indexed in all.
        package var pageCount: Int { pages.reduce(0) { $0 + $1.count } }
    }

    /// The page-in plan of `closure` for pages of `pageSize` bytes: an image whose index is absent
    /// or at another page size is linked eagerly. Only writable segments' pages are paged in.
    package static func plan(_ closure: LaunchClosure, pageSize: UInt64) throws(ClosureError) -> Plan {
        var pages: [[FixupPage]] = [], indexed: [Bool] = [], ranges: [[[Range<UInt64>]]] = []
        for image in closure.images {
            let index = try image.fixupPageIndex.pages(path: image.path)
            // The cache's patches are written eagerly: its pages are the cache's mapping.
            let usable = index.pageSize == pageSize && image.cacheSlot == nil
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

    /// The source for one launch of a prelinked set: its slide runs as the rebase runs of one
    /// image 0, the whole range (`vmSize` bytes at the region's base).
    package init(slideRuns: ArraySlice<UInt8>, pages: [FixupPage], vmSize: UInt64, path: String, pageSize: UInt64) {
        images = [ImagePages(rebaseRuns: slideRuns, bindRuns: [0], pages: pages, vmSize: vmSize, path: path)]
        targetValues = []
        self.pageSize = pageSize
    }

    /// Applies the fixups of the page `page` stands for from their restart points
    /// (``FixupRunWalk``); the fault it finds. Allocates nothing: it runs in the fault handler.
    package func applyFixups(image index: Int, to page: inout PageBuffer) -> PageFillFailure? {
        guard let entry = entry(image: index, vmOffset: page.vmOffset) else { return nil }
        let image = images[index]
        var stores = PageStores(page: page, targetValues: targetValues)
        do throws(FixupFault) {
            if entry.rebases.runs > 0 {
                try FixupRunWalk(image.rebaseRuns, restart: entry.rebases).rebases(within: page, imageSize: image.vmSize, into: &stores)
            }
            if entry.binds.runs > 0 {
                try FixupRunWalk(image.bindRuns, restart: entry.binds).binds(within: page, tableSize: targetValues.count, into: &stores)
            }
        } catch {
            return .fixups(image: index, vmOffset: page.vmOffset, error)
        }
        return nil
    }

    /// Maps with `pager` (`map` registers the ranges) and starts it filling from `source`: the
    /// memory, or nil with why in the report (everything given back) to map eagerly instead.
    static func map(with pager: FixupPager, pages: Int, faultAround: Int, report: inout LaunchReport,
                    _ map: () throws -> LaunchMemory, source: (LaunchMemory) -> PageInFixups) -> LaunchMemory? {
        do {
            let memory = try pager.closedOnFailure(map)
            try memory.releasedOnFailure { () throws(LoadError) in try pager.start(source: source(memory), faultAround: faultAround) }
            report.fixupsMode = .pageIn
            report.fixupPages = pages
            report.registeredBytes = pager.registeredBytes
            return memory
        } catch {
            report.pageInFallback = .setupFailed("\(error)")
            return nil
        }
    }

    /// The index entry of the page at `vmOffset` of image `index`, if the page has one.
    func entry(image index: Int, vmOffset: UInt64) -> FixupPage? {
        guard index < images.count else { return nil }
        let pages = images[index].pages
        let number = vmOffset / pageSize
        let low = pages.partitionPoint { $0.page < number }
        return low < pages.count && pages[low].page == number ? pages[low] : nil
    }
}

/// The page fill's visitor: every fixup stored on the page being filled (``PageBuffer`` bounds the walk).
struct PageStores: FixupRunVisitor {
    let page: PageBuffer
    let targetValues: [UInt64]

    @inline(__always)
    func visitRebase(at location: UInt64, target: RebaseTarget, in run: FixupRun) throws(FixupFault) {
        try page.store(target.value(imageBase: page.imageBase), atImageOffset: location)
    }

    @inline(__always)
    func visitBind(at location: UInt64, targetIndex: Int, addend: Int64, in run: FixupRun) throws(FixupFault) {
        try page.store(targetValues[targetIndex] &+ UInt64(bitPattern: addend), atImageOffset: location)
    }
}
