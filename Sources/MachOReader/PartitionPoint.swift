extension RandomAccessCollection where Index == Int {
    /// The number of leading elements `isBefore` holds for, in a collection where every such
    /// element comes before every other (a binary search: the index of the first element it
    /// does not hold for). The one search over sorted ranges: "the last range starting at or
    /// before X" is the element before `partitionPoint { $0.start <= X }`.
    @inlinable
    package func partitionPoint(_ isBefore: (Element) -> Bool) -> Int {
        var low = startIndex, high = endIndex
        while low < high {
            let middle = low + (high - low) / 2
            if isBefore(self[middle]) { low = middle + 1 } else { high = middle }
        }
        return low
    }
}

extension Array {
    /// ``RandomAccessCollection/partitionPoint(_:)`` over an array, reading elements through
    /// the array's own subscript: the generic search reads them through a protocol witness
    /// whose unoptimized build allocates, and a page-in fill, which must not allocate, runs
    /// its searches inside a SIGBUS handler.
    @inlinable
    package func partitionPoint(_ isBefore: (Element) -> Bool) -> Int {
        var low = 0, high = count
        while low < high {
            let middle = low + (high - low) / 2
            if isBefore(self[middle]) { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
