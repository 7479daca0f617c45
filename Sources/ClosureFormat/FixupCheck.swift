import LaunchPlan

extension LaunchClosure {
    /// Walks image `index`'s runs with every check the eager apply makes, writing nothing
    /// (each run inside one writable segment, each rebase target inside the image, each bind
    /// target index in the table) and, when the image has a page index, checks it is exactly
    /// the one its runs call for. What a page-in launch proves before anything is written or
    /// run, so that its fault handler never meets a run it would refuse.
    package func checkFixups(ofImage index: Int) throws(ClosureError) {
        let image = images[index]
        let expected = try FixupPageIndex.derive(rebaseRuns: image.rebaseRuns, bindRuns: image.bindRuns, within: WritableRanges(image.plan),
                                                 imageSize: image.plan.vmSize, tableSize: bindTargets.count)
        guard image.fixupPageIndex != .absent, expected != image.fixupPageIndex else { return }
        throw ClosureError.fixups(path: nil, image: nil, stream: .pageIndex, fault: .pageIndexDisagrees(page: image.fixupPageIndex.firstDifference(from: expected)))
    }

    /// ``checkFixups(ofImage:)``, a fault named as the launch names it: with the closure's path.
    package func checkFixups(ofImage index: Int, closurePath: String) throws(ClosureError) {
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
