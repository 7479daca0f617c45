import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import LaunchBench
import Testing
import TestSupport

/// The time-vs-dylibs chart drawn from the committed results: every legend label fits in
/// the picture, and each path is drawn with a marker of its own, so paths whose times
/// coincide stay visible.
@Suite(.bounded) struct ChartTests {
    static func committedReport() throws -> BenchReport {
        let json = try Data(contentsOf: URL(fileURLWithPath: BenchTests.repository + "/bench/results/bench.json"))
        return try LaunchBench.decodeReport(json)
    }

    /// Every key of a decoded JSON value, at any depth, with a capital letter (camelCase
    /// where bench.json is snake_case; its maps keyed by path, `floor-protected`, keep their names).
    static func keysWithCapitals(_ value: Any) -> [String] {
        if let object = value as? [String: Any] {
            return object.flatMap { key, member in (key == key.lowercased() ? [] : [key]) + keysWithCapitals(member) }
        }
        if let array = value as? [Any] { return array.flatMap(keysWithCapitals) }
        return []
    }

    /// The paths (key/key/…) of every measured distribution (an object with a `median`)
    /// that no key on the way to it gives a unit (`_ns`, `_kilobytes`).
    static func distributionsWithoutUnit(_ value: Any, path: String = "", unit: Bool = false) -> [String] {
        if let object = value as? [String: Any] {
            if object["median"] != nil { return unit ? [] : [path] }
            return object.flatMap { key, member in
                distributionsWithoutUnit(member, path: path + "/" + key, unit: unit || key.hasSuffix("_ns") || key.hasSuffix("_kilobytes"))
            }
        }
        if let array = value as? [Any] { return array.flatMap { distributionsWithoutUnit($0, path: path + "[]", unit: unit) } }
        return []
    }

    /// The committed bench.json is in the current snake_case layout, every time under a key
    /// that says its unit, and it reads back; so is the pooled summary of tools/bench-processes.
    @Test func committedResultsAreSnakeCase() throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: BenchTests.repository + "/bench/results/bench.json"))
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(object["schema_version"] as? Int == BenchReport.currentSchemaVersion)
        #expect(Self.keysWithCapitals(object).isEmpty, "\(Set(Self.keysWithCapitals(object)))")
        #expect(Self.distributionsWithoutUnit(object).isEmpty, "\(Self.distributionsWithoutUnit(object).prefix(5))")
        #expect(try !Self.committedReport().sizes.isEmpty)
        let summary = try Data(contentsOf: URL(fileURLWithPath: BenchTests.repository + "/bench/processes/summary.json"))
        let pooled = try #require(try JSONSerialization.jsonObject(with: summary) as? [String: Any])
        #expect(pooled["schema_version"] as? Int == BenchReport.currentSchemaVersion)
        #expect(Self.keysWithCapitals(pooled).isEmpty, "\(Set(Self.keysWithCapitals(pooled)))")
    }

    @Test func timeVersusDylibsLegendFits() throws {
        let svg = SVGCharts.timeVersusDylibs(try Self.committedReport())
        let recorder = TextRecorder()
        let parser = XMLParser(data: Data(svg.utf8))
        parser.delegate = recorder
        #expect(parser.parse())
        let width = try #require(recorder.width)
        for label in LaunchPath.allCases.map(SVGCharts.legendName) {
            let placed = try #require(recorder.texts.first { $0.text == label }, "no legend entry \(label)")
            // 12-pixel sans-serif: at most 7 pixels a character.
            #expect(placed.x + 7 * Double(label.count) <= width, "\(label) at x \(placed.x) runs past \(width)")
        }
    }

    /// Each path's marker is an outline of its own shape and size, never filled: markers that
    /// coincide all show.
    @Test func everyPathHasItsOwnMarker() {
        let markers = LaunchPath.allCases.map { SVGCharts.marker($0, 10, 10, "#000000") }
        #expect(Set(markers).count == LaunchPath.allCases.count)
        #expect(markers.allSatisfy { $0.contains("fill=\"none\"") && $0.contains("stroke=") }, "\(markers)")
    }

    /// The lines of the table blocks of `markdown` wider than ``MarkdownReport/maxTableWidth``.
    static func wideTableLines(_ markdown: String) -> [String] {
        markdown.split(separator: "\n").filter { $0.hasPrefix("|") && $0.count > MarkdownReport.maxTableWidth }.map(String.init)
    }

    /// bench.md from the committed results (five sizes up to 1,000 dylibs, and the Objective-C
    /// run): every table fits 100 columns, every figure of the old single tables still there.
    @Test func markdownTablesFitOneHundredColumns() throws {
        for file in ["bench/results/bench.json", "bench/objc-results/bench.json"] {
            let report = try LaunchBench.decodeReport(try Data(contentsOf: URL(fileURLWithPath: BenchTests.repository + "/" + file)))
            let markdown = MarkdownReport.render(report)
            #expect(Self.wideTableLines(markdown).isEmpty, "\(file): \(Self.wideTableLines(markdown).prefix(3))")
            let largest = try #require(report.sizes.last)
            for path in LaunchPath.allCases {
                let warm = try #require(largest.warm[path.rawValue])
                #expect(markdown.contains(MarkdownReport.cell(warm)), "\(file): no warm cell for \(path)")
            }
            #expect(markdown.contains("| phase |") && markdown.contains("| other |"))
        }
        // A table of many wide columns is split, the key column repeated, every cell kept.
        let header = ["dylibs"] + (1...12).map { "column \($0) of twelve" }
        let rows = [["1000"] + (1...12).map { "\($0).00 ms (\($0).50 ms)" }]
        let split = MarkdownReport.table(header, rows)
        #expect(Self.wideTableLines(split).isEmpty && split.components(separatedBy: "| dylibs |").count > 2)
        for cell in header + rows[0] { #expect(split.contains("| \(cell) |")) }
    }

    /// A phase table adds up: other is the total less the phases, whatever the format.
    @Test func phaseTableAddsUpWithOther() {
        let table = MarkdownReport.phaseTable(["closure", "mapping"], [("1 dylib", ["closure": 3, "mapping": 5, "total": 10]),
                                                                      ("10 dylibs", ["closure": 6, "mapping": 9, "bind": 2, "total": 12]),
                                                                      ("100 dylibs", nil)], format: { "\($0)" })
        #expect(table.contains("| closure | 3 | 6 | – |") && table.contains("| mapping | 5 | 9 | – |"), "\(table)")
        #expect(table.contains("| other | 2 | -3 | – |") && table.contains("| total | 10 | 12 | – |"), "\(table)")
    }

    /// A run of one size: every path's point (its polyline's one point) lies inside the plot
    /// area, off its edges, and the markers are drawn after every line.
    @Test func oneSizeTimeChartPutsItsPointsInsideThePlot() throws {
        for dylibs in [1, 100, 400] {
            var report = try Self.committedReport()
            report.sizes = try [#require(report.sizes.first { $0.dylibs == dylibs })]
            let svg = SVGCharts.timeVersusDylibs(report)
            let recorder = ShapeRecorder()
            let parser = XMLParser(data: Data(svg.utf8))
            parser.delegate = recorder
            #expect(parser.parse())
            let plot = SVGCharts.timePlot
            let lines = recorder.shapes.filter { $0.name == "polyline" }
            #expect(lines.count == LaunchPath.allCases.count)
            for line in lines {
                let points = (line.attributes["points"] ?? "").split(separator: " ")
                    .map { $0.split(separator: ",").compactMap { Double($0) } }
                #expect(points.count == 1, "\(line.attributes)")
                guard let point = points.first, point.count == 2 else { continue }
                #expect(point[0] > plot.left + 20 && point[0] < plot.right - 20 && point[1] > plot.top + 10 && point[1] < plot.bottom - 10,
                        "\(dylibs) dylibs: a point at \(point) is on an edge of \(plot)")
            }
            // After the last line: a marker per path, then the legend (from its first line).
            let lastLine = try #require(recorder.shapes.lastIndex { $0.name == "polyline" })
            let plotted = recorder.shapes[(lastLine + 1)...].prefix { $0.name != "line" }
            #expect(plotted.count == LaunchPath.allCases.count && plotted.allSatisfy { $0.attributes["fill"] == "none" }, "\(plotted)")
        }
    }
}

/// Every element's name and attributes, in document order.
final class ShapeRecorder: NSObject, XMLParserDelegate {
    var shapes: [(name: String, attributes: [String: String])] = []
    func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                attributes: [String: String] = [:]) {
        shapes.append((name, attributes))
    }
}

/// The svg width and every text element's x and content.
final class TextRecorder: NSObject, XMLParserDelegate {
    var width: Double?
    var texts: [(x: Double, text: String)] = []
    private var current: (x: Double, text: String)?

    func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                attributes: [String: String] = [:]) {
        if name == "svg" { width = attributes["width"].flatMap(Double.init) }
        if name == "text", attributes["text-anchor"] == "start" { current = (Double(attributes["x"] ?? "") ?? 0, "") }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) { current?.text += string }

    func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
        if name == "text", let current { texts.append(current) }
        current = nil
    }
}
