import Foundation

/// The bench's charts, written as plain SVG (the page-in chart only when page-in was measured).
package enum SVGCharts {
    /// The plot area of ``timeVersusDylibs(_:)``: left, right, top, bottom.
    package static let timePlot = (left: 80.0, right: 600.0, top: 50.0, bottom: 400.0)

    /// Warm median launch time against dylib count, one line per path, both axes log10.
    /// Paths whose times coincide (the floor and the floor with protections, often) stay
    /// apart by marker and dash: each path has its own marker, every one open (an outline
    /// of its own shape and size, which no other fills over) and drawn after every line.
    /// A run of one size puts it in the middle of the dylib axis, and its times at least a
    /// quarter of a decade inside the time axis: no point on an edge of the plot.
    package static func timeVersusDylibs(_ report: BenchReport) -> String {
        let (width, height) = (820.0, 460.0)
        let (left, right, top, bottom) = timePlot
        let sizes = report.sizes.filter { $0.dylibs > 0 }
        let times = sizes.flatMap { size in LaunchPath.allCases.compactMap { size.warm[$0.rawValue]?.median } }.filter { $0 > 0 }
        let oneSize = Set(sizes.map(\.dylibs)).count == 1
        let xDecades = decades(sizes.map { Double($0.dylibs) })
        let yDecades = decades(times.map(Double.init), margin: oneSize ? 0.25 : 0)
        func x(_ value: Double) -> Double { oneSize ? (left + right) / 2 : scale(log10(value), xDecades, left, right) }
        func y(_ value: Double) -> Double { scale(log10(value), yDecades, bottom, top) }

        var svg = header(width, height, "Launch time against dylib count (warm median, log-log)")
        let xTicks = oneSize ? sizes.prefix(1).map { Double($0.dylibs) } : (xDecades.lowerBound...xDecades.upperBound).map { pow(10, Double($0)) }
        for tick in xTicks {
            let position = x(tick)
            svg += line(position, top, position, bottom, "#dddddd")
            svg += text(position, bottom + 18, "\(Int(tick))", anchor: "middle")
        }
        for decade in yDecades.lowerBound...yDecades.upperBound {
            let position = y(pow(10, Double(decade)))
            svg += line(left, position, right, position, "#dddddd")
            svg += text(left - 6, position + 4, timeLabel(decade), anchor: "end")
        }
        svg += line(left, bottom, right, bottom, "#000000") + line(left, top, left, bottom, "#000000")
        svg += text((left + right) / 2, bottom + 38, "dylibs in the app", anchor: "middle")
        var markers = "", legend = ""
        for (row, path) in LaunchPath.allCases.enumerated() {
            let color = path.style.color
            let points = sizes.compactMap { size -> (Double, Double)? in
                guard let median = size.warm[path.rawValue]?.median, median > 0 else { return nil }
                return (x(Double(size.dylibs)), y(Double(median)))
            }
            let dash = path.style.dash.map { " stroke-dasharray=\"\($0)\"" } ?? ""
            svg += "  <polyline fill=\"none\" stroke=\"\(color)\" stroke-width=\"2\"\(dash) points=\""
                + points.map { String(format: "%.1f,%.1f", $0.0, $0.1) }.joined(separator: " ") + "\"/>\n"
            for point in points { markers += marker(path, point.0, point.1, color) }
            let legendY = top + 10 + Double(row) * 22
            legend += "  <line x1=\"\(number(right + 16))\" y1=\"\(number(legendY))\" x2=\"\(number(right + 52))\" y2=\"\(number(legendY))\" "
                + "stroke=\"\(color)\" stroke-width=\"2\"\(dash)/>\n"
            legend += marker(path, right + 34, legendY, color)
            legend += text(right + 60, legendY + 4, legendName(path), anchor: "start")
        }
        // Lines, then the markers over every line, then the legend.
        return svg + markers + legend + "</svg>\n"
    }

    /// Each size's dyld3 launch as a 100% bar split into its phases, the total on top.
    static func dyld3Phases(_ report: BenchReport) -> String {
        let phases: [(name: String, color: String)] = [("closure", "#9467bd"), ("mapping", "#ff7f0e"), ("bind", "#1f77b4"), ("other", "#c7c7c7")]
        let (width, height) = (760.0, 460.0)
        let (left, right, top, bottom) = (80.0, 600.0, 50.0, 400.0)
        var svg = header(width, height, "dyld3 launch phases (warm medians, share of the total)")
        for percent in stride(from: 0, through: 100, by: 25) {
            let position = bottom - (bottom - top) * Double(percent) / 100
            svg += line(left, position, right, position, "#dddddd")
            svg += text(left - 6, position + 4, "\(percent)%", anchor: "end")
        }
        let slot = (right - left) / Double(max(report.sizes.count, 1))
        for (column, size) in report.sizes.enumerated() {
            let total = Double(size.dyld3Phases["total"] ?? 0)
            guard total > 0 else { continue }
            var parts = phases.dropLast().map { Double(size.dyld3Phases[$0.name] ?? 0) }
            parts.append(max(0, total - parts.reduce(0, +)))
            let barX = left + slot * Double(column) + slot * 0.2
            var cursor = bottom
            for (part, phase) in zip(parts, phases) {
                let barHeight = (bottom - top) * part / max(total, parts.reduce(0, +))
                cursor -= barHeight
                svg += "  <rect x=\"\(number(barX))\" y=\"\(number(cursor))\" width=\"\(number(slot * 0.6))\" height=\"\(number(barHeight))\" "
                    + "fill=\"\(phase.color)\"><title>\(phase.name): \(MarkdownReport.time(Int64(part)))</title></rect>\n"
            }
            svg += text(barX + slot * 0.3, top - 6, MarkdownReport.time(Int64(total)), anchor: "middle")
            svg += text(barX + slot * 0.3, bottom + 18, "\(size.dylibs)", anchor: "middle")
        }
        svg += line(left, bottom, right, bottom, "#000000")
        svg += text((left + right) / 2, bottom + 38, "dylibs in the app (total above each bar)", anchor: "middle")
        svg += swatchLegend(phases, x: right + 20, top: top)
        return svg + "</svg>\n"
    }

    /// Page-in linking beside eager dyld3, per size: the eager launch, the page-in launch,
    /// and the page-in launch plus touching 10%, 50% and 100% of the fixup pages (medians),
    /// each bar against one linear time axis per size (sizes differ by orders of magnitude).
    static func pageIn(_ report: BenchReport) -> String {
        let bars: [(name: String, color: String)] = [("eager dyld3", "#1f77b4"), ("page-in launch", "#ff7f0e"),
                                                     ("launch + 10%", "#fdae6b"), ("launch + 50%", "#e6550d"), ("launch + 100%", "#a63603")]
        let sizes = report.sizes.filter { $0.pageIn != nil }
        let (width, height) = (760.0, 460.0)
        let (left, right, top, bottom) = (40.0, 600.0, 60.0, 400.0)
        var svg = header(width, height, "Page-in linking: launch, then touching the fixup pages (medians; each size to its own scale)")
        let slot = (right - left) / Double(max(sizes.count, 1))
        for (column, size) in sizes.enumerated() {
            let result = size.pageIn!
            let launch = result.launch.median
            let values = [result.eagerLaunch.median, launch] + PageInResult.touchLevels.map { launch + (result.touch["\($0)"]?.median ?? 0) }
            let highest = Double(max(values.max() ?? 1, 1))
            let barWidth = slot * 0.8 / Double(bars.count)
            for (row, (value, bar)) in zip(values, bars).enumerated() {
                let barHeight = (bottom - top) * Double(value) / highest
                let barX = left + slot * Double(column) + slot * 0.1 + barWidth * Double(row)
                svg += "  <rect x=\"\(number(barX))\" y=\"\(number(bottom - barHeight))\" width=\"\(number(barWidth * 0.9))\" "
                    + "height=\"\(number(barHeight))\" fill=\"\(bar.color)\"><title>\(bar.name): \(MarkdownReport.time(value))</title></rect>\n"
                svg += text(barX + barWidth * 0.45, bottom - barHeight - 4, MarkdownReport.time(value), anchor: "middle", size: 9)
            }
            let mode = result.fallbackReason == nil ? "" : " (eager fallback)"
            svg += text(left + slot * (Double(column) + 0.5), bottom + 18, "\(size.dylibs) dylibs, \(result.fixupPages) fixup pages\(mode)", anchor: "middle")
        }
        svg += line(left, bottom, right, bottom, "#000000")
        svg += swatchLegend(bars, x: right + 20, top: top)
        return svg + "</svg>\n"
    }

    /// A marker's outline: a circle of a radius, a square of a side, or a polygon of points
    /// around its centre.
    enum Marker {
        case circle(Double), square(Double), polygon([(Double, Double)])
    }

    /// A path's marker at (x, y): an outline, never filled, each path's of its own shape and
    /// size (a small circle, a square, a large diamond, a triangle, a large circle, a large
    /// square: ``LaunchPath/style``), so markers that coincide show every path: no outline
    /// covers another's.
    package static func marker(_ path: LaunchPath, _ x: Double, _ y: Double, _ color: String) -> String {
        let open = "fill=\"none\" stroke=\"\(color)\" stroke-width=\"1.5\""
        switch path.style.marker {
        case let .circle(radius):
            return "  <circle cx=\"\(number(x))\" cy=\"\(number(y))\" r=\"\(radius)\" \(open)/>\n"
        case let .square(side):
            return "  <rect x=\"\(number(x - side / 2))\" y=\"\(number(y - side / 2))\" width=\"\(Int(side))\" height=\"\(Int(side))\" \(open)/>\n"
        case let .polygon(points):
            return "  <polygon points=\"\(points.map { "\(number(x + $0.0)),\(number(y + $0.1))" }.joined(separator: " "))\" \(open)/>\n"
        }
    }

    /// A coordinate with one decimal.
    static func number(_ value: Double) -> String { String(format: "%.1f", value) }

    package static func legendName(_ path: LaunchPath) -> String { path.style.legend }

    /// The whole decades spanning `values` (at least one decade wide), each value at least
    /// `margin` decades inside.
    static func decades(_ values: [Double], margin: Double = 0) -> ClosedRange<Int> {
        let logs = values.filter { $0 > 0 }.map(log10)
        let low = Int(((logs.min() ?? 0) - margin).rounded(.down)), high = Int(((logs.max() ?? 1) + margin).rounded(.up))
        return low...max(high, low + 1)
    }

    static func scale(_ value: Double, _ range: ClosedRange<Int>, _ from: Double, _ to: Double) -> Double {
        from + (to - from) * (value - Double(range.lowerBound)) / Double(range.upperBound - range.lowerBound)
    }

    static func timeLabel(_ decade: Int) -> String {
        let units = [(9, "s"), (6, "ms"), (3, "µs"), (0, "ns")]
        let (exponent, unit) = units.first { decade >= $0.0 } ?? (0, "ns")
        return "\(Int(pow(10, Double(decade - exponent)))) \(unit)"
    }

    static func header(_ width: Double, _ height: Double, _ title: String) -> String {
        String(format: "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n", width, height, width, height)
            + "  <rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n"
            + text(width / 2, 24, title, anchor: "middle", size: 15)
    }

    /// A legend of colour swatches, one row per entry, from (`x`, `top`).
    static func swatchLegend(_ entries: [(name: String, color: String)], x: Double, top: Double) -> String {
        entries.enumerated().map { row, entry in
            let legendY = top + 10 + Double(row) * 22
            return "  <rect x=\"\(number(x))\" y=\"\(number(legendY - 7))\" width=\"14\" height=\"14\" fill=\"\(entry.color)\"/>\n"
                + text(x + 20, legendY + 4, entry.name, anchor: "start")
        }.joined()
    }

    static func line(_ x1: Double, _ y1: Double, _ x2: Double, _ y2: Double, _ color: String, width: Double = 1) -> String {
        "  <line x1=\"\(number(x1))\" y1=\"\(number(y1))\" x2=\"\(number(x2))\" y2=\"\(number(y2))\" stroke=\"\(color)\" stroke-width=\"\(number(width))\"/>\n"
    }

    static func text(_ x: Double, _ y: Double, _ content: String, anchor: String, size: Int = 12) -> String {
        let escaped = content.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
        return "  <text x=\"\(number(x))\" y=\"\(number(y))\" text-anchor=\"\(anchor)\" font-size=\"\(size)\">\(escaped)</text>\n"
    }
}
