/// The samples of one measurement and their order statistics.
package struct Distribution: Codable, Sendable, Equatable {
    package var median: Int64
    /// Nearest-rank 90th percentile.
    package var p90: Int64
    package var min: Int64
    package var max: Int64
    package var samples: [Int64]

    package init(_ samples: [Int64]) {
        let sorted = samples.sorted()
        self.samples = samples
        median = Distribution.rank(sorted, 0.5)
        p90 = Distribution.rank(sorted, 0.9)
        min = sorted.first ?? 0
        max = sorted.last ?? 0
    }

    /// The nearest-rank percentile `q` of sorted samples (0 when there are none).
    static func rank(_ sorted: [Int64], _ q: Double) -> Int64 {
        guard !sorted.isEmpty else { return 0 }
        let index = Int((q * Double(sorted.count)).rounded(.up)) - 1
        return sorted[Swift.max(0, Swift.min(sorted.count - 1, index))]
    }
}
