import LaunchPlan

extension LaunchClosure {
    /// Walks image `index`'s rebase and bind runs (``FixupRunWalk``) with every check the
    /// eager apply makes, writing nothing: each run inside one writable segment of the image's
    /// plan, each rebase target inside the image, each bind target index in the table; and,
    /// when the image has a page index, that the index is exactly the one its runs call for
    /// (every page that a run writes points at that page's runs, and no other page is
    /// listed). What a page-in launch proves before anything is written or run (beside the
    /// mapping, with the plan check, when its helper runs; before it otherwise), so that its
    /// fault handler never meets a run it would refuse: the same refusals as an eager launch.
    public func checkFixups(ofImage index: Int) throws(ClosureError) {
        let image = images[index]
        let writable = WritableRanges(image.plan)
        let vmSize = image.plan.vmSize
        let tableSize = bindTargets.count
        var rebasePages = FixupPageIndex.Collector(), bindPages = FixupPageIndex.Collector()
        try ClosureError.walking(.rebases) { () throws(FixupFault) in
            try FixupRunWalk(image.rebaseRuns).rebases(within: writable, imageSize: vmSize, into: &rebasePages)
        }
        try ClosureError.walking(.binds) { () throws(FixupFault) in
            try FixupRunWalk(image.bindRuns).binds(within: writable, tableSize: tableSize, into: &bindPages)
        }
        try checkPageIndex(of: image, rebases: rebasePages, binds: bindPages)
    }

    /// An image's page index, unless absent, must be the one its runs' restart points make.
    private func checkPageIndex(of image: ClosureImage, rebases: FixupPageIndex.Collector,
                                binds: FixupPageIndex.Collector) throws(ClosureError) {
        guard image.fixupPageIndex != .absent else { return }
        let expected = FixupPageIndex(rebases: rebases.restarts, binds: binds.restarts)
        guard expected != image.fixupPageIndex else { return }
        throw ClosureError.fixups(path: nil, image: nil, stream: .pageIndex, fault: .pageIndexDisagrees(page: image.fixupPageIndex.firstDifference(from: expected)))
    }

    /// ``checkFixups(ofImage:)``, a fault named as the launch names it: with the closure's path.
    public func checkFixups(ofImage index: Int, closurePath: String) throws(ClosureError) {
        try naming(closurePath, image: index) { () throws(ClosureError) in try checkFixups(ofImage: index) }
    }
}

extension FixupPageIndex {
    /// The first page number at which this index and `other` differ (an entry that differs,
    /// or one only one of them has); for indexes at different page sizes, 0.
    func firstDifference(from other: FixupPageIndex) -> UInt64 {
        guard let mine = try? pages(path: ""), let theirs = try? other.pages(path: ""), mine.pageSize == theirs.pageSize else { return 0 }
        if let (a, b) = zip(mine.pages, theirs.pages).first(where: { $0 != $1 }) { return min(a.page, b.page) }
        let common = min(mine.pages.count, theirs.pages.count)
        let longer = mine.pages.count > common ? mine.pages : theirs.pages
        return common < longer.count ? longer[common].page : 0
    }
}
