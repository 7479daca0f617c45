import Foundation

/// The product's performance targets, evaluated on a report. Reported, never asserted.
enum Targets {
    /// Each target that applies to `report`, as a Markdown list item: met or missed, and what was measured.
    static func evaluate(_ report: BenchReport) -> [String] {
        var checks: [String] = []
        func check(_ met: Bool, _ format: String, _ arguments: CVarArg...) {
            checks.append("- \(met ? "met" : "**missed**"): " + String(format: format, arguments: arguments))
        }
        if let size = report.sizes.first(where: { $0.dylibs == 400 }) {
            func median(_ path: LaunchPath) -> Double { Double(size.warm[path.rawValue]?.median ?? 0) }
            let (dyld2, dyld3, floor, protected) = (median(.dyld2), median(.dyld3), median(.floor), median(.floorProtected))
            if let best = LaunchPath.fasterGlibc(size.warm), floor > 0, dyld3 > 0 {
                let glibc = Double(best.median), name = best.path.label
                check(dyld3 <= 1.3 * floor, "400 dylibs: dyld3 ≤ 1.3× the mapping floor (%.2f×)", dyld3 / floor)
                check(dyld3 <= 1.15 * floor, "400 dylibs: dyld3 ≤ 1.15× the mapping floor (%.2f×)", dyld3 / floor)
                if protected > 0 {
                    check(dyld3 <= 1.15 * protected, "400 dylibs: dyld3 ≤ 1.15× the floor with the images' final protections "
                        + "(the same target against a floor that ends with dyld3's memory; %.2f×)", dyld3 / protected)
                }
                check(dyld3 <= 0.5 * glibc, "400 dylibs: dyld3 ≤ 0.5× best glibc, \(name) (%.2f×)", dyld3 / glibc)
                check(dyld2 >= 3 * dyld3, "400 dylibs: dyld3 ≥ 3× faster than dyld2 (%.2f×)", dyld2 / dyld3)
                check(dyld2 <= 1.3 * glibc, "400 dylibs: dyld2 ≤ 1.3× best glibc, \(name) (%.2f×)", dyld2 / glibc)
            }
            if let cold = size.cold, let best = LaunchPath.fasterGlibc(cold),
               let dyld3 = cold[LaunchPath.dyld3.rawValue]?.median, let dyld2 = cold[LaunchPath.dyld2.rawValue]?.median, dyld2 > 0 {
                let (d3, d2, glibc) = (Double(dyld3), Double(dyld2), Double(best.median))
                check(d3 <= 0.5 * d2, "400 dylibs, cold: dyld3 ≤ 0.5× dyld2 (%.2f×: %@ vs %@)", d3 / d2, MarkdownReport.time(dyld3), MarkdownReport.time(dyld2))
                check(d3 <= glibc, "400 dylibs, cold: dyld3 ≤ best glibc, \(best.path.label) (%.2f×: %@ vs %@)",
                      d3 / glibc, MarkdownReport.time(dyld3), MarkdownReport.time(best.median))
            }
            // Page-in, against eager dyld3 in the same rounds.
            if let pageIn = size.pageIn, pageIn.fallbackReason == nil, pageIn.eagerLaunch.median > 0 {
                let eager = Double(pageIn.eagerLaunch.median), launch = Double(pageIn.launch.median)
                let full = launch + Double(pageIn.touch["100"]?.median ?? 0)
                let privateEager = pageIn.privatePages["eager"] ?? 0, privateLaunch = pageIn.privatePages["launch"] ?? 0
                check(launch <= 0.6 * eager, "400 dylibs: page-in launch ≤ 0.6× eager dyld3 (%.2f×)", launch / eager)
                check(full <= 1.3 * eager, "400 dylibs: page-in launch + touching 100%% of the fixup pages ≤ 1.3× eager dyld3 (%.2f×)", full / eager)
                check(privateEager > 0 && privateLaunch * 100 <= privateEager,
                      "400 dylibs: private fixup pages after a page-in launch ≤ 1%% of eager's (%d of %d)", privateLaunch, privateEager)
            }
        }
        let flatSizes = report.sizes.filter { $0.dylibs >= 10 }
        if flatSizes.count >= 2 {
            for path in LaunchPath.allCases {
                let values = flatSizes.compactMap { $0.nanosecondsPerFixup[path.rawValue] }.filter { $0 > 0 }
                guard let low = values.min(), let high = values.max() else { continue }
                let spread = high / low
                let perSize = values.map { String(format: "%.1f", $0) }.joined(separator: ", ")
                check(spread <= 1.5, "\(path.rawValue) time per fixup flat from \(flatSizes[0].dylibs) to \(flatSizes[flatSizes.count - 1].dylibs) dylibs "
                    + "(max/min within 1.5: %.2f; \(perSize) ns)", spread)
            }
        }
        for size in report.sizes where [100, 400].contains(size.dylibs) {
            guard let signing = size.codeSigning, signing.dyld3Eager.median > 0 else { continue }
            check(signing.cdhashLaunchShare <= 0.05, "%d dylibs: the cdHash identity check within 5%% of the dyld3 launch (%.1f%%)",
                  size.dylibs, signing.cdhashLaunchShare * 100)
        }
        for size in report.sizes where size.closure.imageMetadataBytes > 0 {
            check(size.closure.relativeToMetadata <= 0.4, "%d dylibs: closure ≤ 40%% of the images' fixup and export metadata (%.0f%%)",
                  size.dylibs, size.closure.relativeToMetadata * 100)
        }
        return checks
    }
}
